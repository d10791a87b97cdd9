//! R-BRW-OBS and R-BRW-SNAP against a real headless Chromium: generations and refs, iframes
//! and open shadow DOM, sensitive fields, truncation, focus, the snapshot view.

mod support;

use jevgate::browser::*;
use support::pages::*;
use support::{shared_browser, Closing, Server};

fn setup() -> (Server, Closing, LocalTab) {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().expect("open tab");
    (server, browser, tab)
}

fn click(tab: &LocalTab, op: &str, generation: u64, r: &str) -> jevgate::Result<ActionResult> {
    tab.page_click(ClickArgs {
        operation_id: op.into(),
        generation,
        reference: r.into(),
    })
}

fn find<'a>(obs: &'a jevgate::observation::Observation, name: &str) -> &'a jevgate::observation::Control {
    obs.controls
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no control named {name}: {:?}", obs.controls))
}

#[test]
fn r_brw_obs_observation_has_refs_navigation_scroll_and_text() {
    let (server, _b, tab) = setup();
    let nav = tab.navigate(&server.url("/p/buttons")).unwrap();
    assert!(nav.settled);
    let obs = tab.observe().unwrap();
    assert!(obs.generation >= 1);
    assert_eq!(obs.title, "Buttons");
    assert!(obs.url.ends_with("/p/buttons"));
    assert!(obs.text.contains("Some plain text here."));
    let go = find(&obs, "Press me");
    assert_eq!(go.role, "button");
    assert!(go.reference.starts_with('e'));
    assert_eq!(find(&obs, "Second page").role, "link");
    assert!(find(&obs, "Disabled one").disabled);
    assert_eq!(obs.navigation.unwrap().can_go_back, true);
    assert!(obs.scroll.at_top && obs.scroll.at_bottom);
    // Nothing changed: the same generation and refs.
    let again = tab.observe().unwrap();
    assert_eq!(again.generation, obs.generation);
    assert_eq!(again.controls, obs.controls);
    tab.close().unwrap();
}
