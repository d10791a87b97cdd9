//! The computer helper's AT-SPI reading against a hostile application (issue 25): a fake
//! accessibility tree served over a private D-Bus daemon, with a cycle through a parent, a node
//! that is its own child, a node claiming a million children, a 100,000-character name, 10,000
//! actions, a child that does not exist and a password field whose text would be read if the
//! helper asked. The reading ends, bounded, without a panic, and never asks for the password's text.
//!
//! Skipped, with the reason printed, without the cargo feature `computer` or `dbus-daemon`; a
//! failure instead under `JEVGATE_REQUIRE_DESKTOP=1`.

use std::io::Write;

fn skip(why: &str) {
    let required = std::env::var("JEVGATE_REQUIRE_DESKTOP").is_ok_and(|v| v == "1");
    assert!(!required, "JEVGATE_REQUIRE_DESKTOP=1 but {why}");
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

#[cfg(not(feature = "computer"))]
#[test]
fn hostile_tree_is_read_bounded() {
    skip("this test binary was built without the cargo feature `computer`");
}

#[cfg(feature = "computer")]
#[test]
fn hostile_tree_is_read_bounded() {
    hostile::run();
}

#[cfg(feature = "computer")]
mod hostile {
    use super::skip;
    use jevgate::unstable::computer::atspi::{Application, Atspi, Object};
    use jevgate::unstable::computer::model;
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, OnceLock};
    use std::time::{Duration, Instant};
    use zbus::zvariant::OwnedObjectPath;

    struct Daemon(Child);
    impl Drop for Daemon {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn path(p: &str) -> OwnedObjectPath {
        OwnedObjectPath::try_from(p).expect("object path")
    }

    struct Node {
        bus: Arc<OnceLock<String>>,
        role: &'static str,
        name: String,
        children: Vec<&'static str>,
        count: i32,
        interfaces: Vec<&'static str>,
    }

    impl Node {
        fn pair(&self, p: &str) -> (String, OwnedObjectPath) {
            (self.bus.get().cloned().unwrap_or_default(), path(p))
        }
    }

    #[zbus::interface(name = "org.a11y.atspi.Accessible")]
    impl Node {
        fn get_children(&self) -> Vec<(String, OwnedObjectPath)> {
            self.children.iter().map(|c| self.pair(c)).collect()
        }
        fn get_child_at_index(&self, _i: i32) -> (String, OwnedObjectPath) {
            self.pair("/h/a")
        }
        fn get_state(&self) -> Vec<u32> {
            // ACTIVE, SENSITIVE, SHOWING, VISIBLE, and junk words after the two that count.
            vec![(1 << 1) | (1 << 24) | (1 << 25) | (1 << 30), 0, u32::MAX, 7]
        }
        fn get_role_name(&self) -> String {
            self.role.to_string()
        }
        fn get_interfaces(&self) -> Vec<String> {
            self.interfaces.iter().map(|s| s.to_string()).collect()
        }
        #[zbus(property)]
        fn name(&self) -> String {
            self.name.clone()
        }
        #[zbus(property)]
        fn child_count(&self) -> i32 {
            self.count
        }
        #[zbus(property)]
        fn description(&self) -> String {
            "d".repeat(50_000)
        }
    }

    struct Actions;
    #[zbus::interface(name = "org.a11y.atspi.Action")]
    impl Actions {
        fn get_actions(&self) -> Vec<(String, String, String)> {
            (0..10_000)
                .map(|i| (format!("a{i}"), String::new(), String::new()))
                .collect()
        }
        fn do_action(&self, _i: i32) -> bool {
            true
        }
    }

    struct Secret(Arc<AtomicBool>);
    #[zbus::interface(name = "org.a11y.atspi.Text")]
    impl Secret {
        fn get_text(&self, _start: i32, _end: i32) -> String {
            self.0.store(true, Ordering::SeqCst);
            "hunter2".into()
        }
        #[zbus(property)]
        fn character_count(&self) -> i32 {
            self.0.store(true, Ordering::SeqCst);
            7
        }
    }

    pub fn run() {
        let daemon = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1", "--nopidfile"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = daemon else {
            skip("dbus-daemon is not installed");
            return;
        };
        let stdout = child.stdout.take().expect("stdout");
        let daemon = Daemon(child);
        let mut address = String::new();
        BufReader::new(stdout)
            .read_line(&mut address)
            .expect("the daemon's address");
        let address = address.trim().to_string();

        let bus = Arc::new(OnceLock::new());
        let secret_read = Arc::new(AtomicBool::new(false));
        let node = |role, name: String, children: Vec<&'static str>, count, interfaces| Node {
            bus: bus.clone(),
            role,
            name,
            children,
            count,
            interfaces,
        };
        let acc = "org.a11y.atspi.Accessible";
        let server = zbus::blocking::connection::Builder::address(address.as_str())
            .expect("address")
            .serve_at(
                "/h/app",
                node("application", "evil".into(), vec!["/h/win"], 1, vec![acc]),
            )
            .expect("serve")
            .serve_at(
                "/h/win",
                node(
                    "frame",
                    "W".into(),
                    vec!["/h/a", "/h/gone", "/h/p"],
                    3,
                    vec![acc],
                ),
            )
            .expect("serve")
            // A cycle through its parent and itself.
            .serve_at(
                "/h/a",
                node(
                    "panel",
                    String::new(),
                    vec!["/h/win", "/h/a", "/h/b"],
                    3,
                    vec![acc],
                ),
            )
            .expect("serve")
            // A million children claimed, a huge name, 10,000 actions.
            .serve_at(
                "/h/b",
                node(
                    "push button",
                    "x".repeat(100_000),
                    Vec::new(),
                    1_000_000,
                    vec![acc, "org.a11y.atspi.Action"],
                ),
            )
            .expect("serve")
            .serve_at("/h/b", Actions)
            .expect("serve")
            .serve_at(
                "/h/p",
                node(
                    "password text",
                    "PIN".into(),
                    Vec::new(),
                    0,
                    vec![acc, "org.a11y.atspi.Text"],
                ),
            )
            .expect("serve")
            .serve_at("/h/p", Secret(secret_read.clone()))
            .expect("serve")
            .build()
            .expect("the fake application connects");
        let unique = server.unique_name().expect("unique name").to_string();
        bus.set(unique.clone()).expect("set once");

        let client = Atspi::connect_address(&address).expect("client connects");
        let app = Application {
            name: "evil".into(),
            root: Object {
                bus: unique,
                path: path("/h/app"),
            },
        };
        let started = Instant::now();
        let reading = client.read(&app).expect("the reading ends");
        assert!(started.elapsed() < Duration::from_secs(10));
        // win, a, b and p, each once; the missing child is skipped.
        assert_eq!(reading.nodes.len(), 4, "{:?}", reading.nodes);
        for n in &reading.nodes {
            assert!(n.name.chars().count() <= model::MAX_NAME_CHARS);
            assert!(n.actions.len() <= 16);
        }
        assert!(
            !secret_read.load(Ordering::SeqCst),
            "the password's text was read"
        );
        let obs = model::build(&reading.application, &reading.nodes);
        let json = serde_json::to_string(&obs).expect("JSON");
        assert!(!json.contains("hunter2"));
        assert!(obs
            .controls
            .iter()
            .any(|c| c.sensitive && c.value.is_none()));
        assert_eq!(obs.window_title, "W");
        // Reading the password's text on purpose is refused, unread.
        let p = Object {
            bus: app.root.bus.clone(),
            path: path("/h/p"),
        };
        assert!(client
            .read_text(&p)
            .is_err_and(|e| e.code == "ACTION_UNAVAILABLE"));
        assert!(!secret_read.load(Ordering::SeqCst));
        drop(server);
        drop(daemon);
    }
}
