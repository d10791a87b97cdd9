//! The paired computers open task sessions watch, for the revocation a disconnect leaves
//! (issue 25 item 4; seed 003 "Computer connection status": "Disconnect revokes Computer Use
//! device access even while a task is idle"). One [`AccessWatch`] per gateway process, keyed by
//! device id: the connection last seen (the hub's serial: a new connection has a new one), how
//! many open sessions watch it, and whether its access is revoked until its helper confirms.
//!
//! It owns only that bookkeeping; what a check sends and how a status reads is
//! `computer.rs`'s. It must never send anything, never hold its lock across a call, and never
//! revoke a device no open session watches (a helper restarted outside any task keeps its
//! approval).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// One watched device.
#[derive(Debug, Default)]
struct Watched {
    /// Open task sessions watching it.
    sessions: usize,
    /// The connection seen last (`None`: none here).
    serial: Option<u64>,
    /// A connection ended since access was last confirmed: access is revoked until its helper
    /// confirms it.
    revoke: bool,
}

/// The paired computers open task sessions watch, and the revocations a disconnect left (one
/// per gateway process; see the module comment).
#[derive(Debug, Default)]
pub(crate) struct AccessWatch {
    devices: Mutex<HashMap<String, Watched>>,
}

impl AccessWatch {
    /// An open task session starts watching `device_id`, whose connection here is `serial`.
    pub(super) fn watch(self: &Arc<Self>, device_id: &str, serial: Option<u64>) -> ConnectionWatch {
        {
            let mut devices = self.devices.lock();
            let w = devices.entry(device_id.to_string()).or_default();
            w.sessions = w.sessions.saturating_add(1);
            if w.serial.is_none() {
                w.serial = serial;
            }
        }
        ConnectionWatch {
            watch: Arc::clone(self),
            device_id: device_id.to_string(),
        }
    }

    /// The connection `serial` is seen for `device_id` now: a watched device's connection that
    /// ended (none now, or another one) revokes its access. Whether a revocation is pending.
    pub(super) fn saw(&self, device_id: &str, serial: Option<u64>) -> bool {
        let mut devices = self.devices.lock();
        let Some(w) = devices.get_mut(device_id) else {
            return false;
        };
        if w.serial.is_some() && w.serial != serial {
            w.revoke = true;
        }
        w.serial = serial;
        w.revoke
    }

    /// The device answered offline: a watched one's access is revoked.
    pub(super) fn went_offline(&self, device_id: &str) {
        if let Some(w) = self.devices.lock().get_mut(device_id) {
            w.revoke = true;
        }
    }

    /// The helper confirmed the revocation.
    pub(super) fn confirmed(&self, device_id: &str) {
        if let Some(w) = self.devices.lock().get_mut(device_id) {
            w.revoke = false;
        }
    }

    /// Whether a revocation of `device_id` is pending (tests and status).
    #[cfg(test)]
    fn pending(&self, device_id: &str) -> bool {
        self.devices.lock().get(device_id).is_some_and(|w| w.revoke)
    }
}

/// An open task session's watch of a paired computer: ends when dropped.
pub(crate) struct ConnectionWatch {
    watch: Arc<AccessWatch>,
    device_id: String,
}

impl Drop for ConnectionWatch {
    fn drop(&mut self) {
        let mut devices = self.watch.devices.lock();
        if let Some(w) = devices.get_mut(&self.device_id) {
            w.sessions = w.sessions.saturating_sub(1);
            if w.sessions == 0 {
                devices.remove(&self.device_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Seed 003: a watched device's connection that ends (gone, or another one) revokes its
    // access until confirmed; an unwatched device is never revoked.
    #[test]
    fn r_computer_a_disconnect_revokes_a_watched_devices_access() {
        let watch = Arc::new(AccessWatch::default());
        assert!(!watch.saw("d", Some(1)));
        watch.went_offline("d");
        assert!(!watch.pending("d"), "not watched");
        let g = watch.watch("d", Some(1));
        let second = watch.watch("d", Some(9));
        assert!(
            !watch.saw("d", Some(1)),
            "the first session's connection is kept"
        );
        drop(second);
        assert!(!watch.saw("d", Some(1)));
        assert!(watch.saw("d", None), "gone");
        assert!(watch.saw("d", Some(2)), "still pending after the reconnect");
        watch.confirmed("d");
        assert!(!watch.saw("d", Some(2)));
        assert!(
            watch.saw("d", Some(3)),
            "another connection between two looks"
        );
        watch.confirmed("d");
        watch.went_offline("d");
        assert!(watch.pending("d"));
        drop(g);
        assert!(!watch.pending("d"), "forgotten once no session watches it");
    }
}
