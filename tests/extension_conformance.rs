//! The browser extension as a device (issue 22 item 6, R-DEV-TOOLS, R-DEV-CAPS, R-DEV-SHOT,
//! R-BRW-SNAP, R-BRW-OBS): a real headless Chromium with `extension/` loaded, paired with a
//! gateway through its options page with a pairing code, answers the one conformance suite every device runs — and answers it the same as
//! the reference worker (BrowserTools on a local Chromium, what `jevgate-worker` runs) on the
//! same fixture pages, step by step, once operation ids, generation numbers, artifact ids and
//! the fixture server's port are taken out.

mod support;

use std::time::Duration;
use support::conformance::{assert_same, every_tool, Device, ReferenceWorker};
use support::extension::ExtensionBrowser;
use support::Server;

// Issue 22 item 6: the same suite, the same answers, on the reference worker and the extension.
#[test]
fn issue22_the_extension_answers_the_conformance_suite_like_the_reference_worker() {
    let t = support::gateway::builder().channel().build();
    let channel = t.channel();

    // The reference worker on a local Chromium.
    let reference = {
        let server = Server::start();
        let worker = ReferenceWorker::start(&t, "alice", "alice-install");
        let dev = Device {
            gw: &t.gw,
            owner: "alice".into(),
            conversation: "conv-a".into(),
            device: worker.device.clone(),
        };
        let transcript = every_tool(&dev, &server);
        worker.close();
        transcript
    };

    // The extension in its own Chromium.
    let server = Server::start();
    let ext = ExtensionBrowser::launch();
    let device = ext.pair_with_code(&t.gw, channel, "bob");
    ext.wait_conn("online", Duration::from_secs(20));
    let dev = Device {
        gw: &t.gw,
        owner: "bob".into(),
        conversation: "conv-b".into(),
        device,
    };
    let got = every_tool(&dev, &server);
    assert_same(&reference, &got);
}
