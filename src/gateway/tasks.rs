//! The task methods of [`Gateway`] (R-TSK): [`Gateway::tasks`], and the [`Host`] the task
//! service gets instead of the gateway itself — Jev evaluations with the gateway's checks and
//! usage records, the feature and access gate on the live configuration, and targets (a local
//! Chromium per task — on a profile only once the lease manager pinned it for the task, so a
//! task and a thread session never open one profile directory together — a paired device's
//! tab, or a paired computer under one desktop lease released on every exit path, asked for the
//! person's access when a run opens it and checked for its connection every five seconds).
//! Thin: the host holds a weak reference, so a
//! task thread never keeps a closed gateway alive, and holds no lock across a call.

use super::{Gateway, Inner};
use crate::browser::{BrowserBackend, LaunchOptions, LeaseAction, LocalBrowser, TabLeaseArgs};
use crate::config::BrowserTaskGrant;
use crate::device::computer::ComputerConnection;
use crate::device::Capability;
use crate::jev::{EvaluateCall, Evaluation};
use crate::task::{ComputerTarget, OpenTarget, TaskHost, TaskOwner, TaskTarget, Tasks};
use crate::CancelToken;
use crate::{Error, Result};
use parking_lot::RwLock;
use std::sync::{Arc, Weak};

impl Gateway {
    /// The task API (R-TSK): spawn, status, wait, command, cancel, list, receipts. Browser
    /// tasks are off unless the configuration enables Jev and `features.browserTasks` for an
    /// agent with Jev access ([`crate::Config::browser_task_gate`]).
    ///
    /// ```
    /// use jevgate::task::{SpawnRequest, TaskOwner};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
    /// let owner = TaskOwner::new("assistant", "alice", "conv-1");
    /// assert!(gw.tasks().list(&owner).unwrap().is_empty());
    /// // An unknown id answers as another owner's task does: nothing tells them apart.
    /// assert_eq!(gw.tasks().status(&owner, "nope").unwrap_err().code(), "ACCESS_DENIED");
    /// // The default configuration turns browser tasks off.
    /// let off = gw.tasks().spawn(&owner, SpawnRequest::new("press Search")).unwrap_err();
    /// assert_eq!(off.code(), "ORCHESTRATION_DISABLED");
    /// gw.close();
    /// ```
    pub fn tasks(&self) -> Tasks<'_> {
        Tasks::new(&self.inner.tasks)
    }
}

/// A task's pin of a profile (issue 21 item 5): ends when dropped, so every path that lets go
/// of the task's browser — its close, a failed launch, a target never handed over — lets go of
/// the profile too.
struct ProfilePin {
    leases: crate::lease::Leases,
    hash: String,
    holder: String,
}

impl Drop for ProfilePin {
    fn drop(&mut self) {
        self.leases.unpin_profile(&self.hash, &self.holder);
    }
}

/// A task's local Chromium and its profile pin: dropping it closes the browser, *then* ends
/// the pin (fields drop in order after `drop`), so the profile is never let go while this
/// Chromium still has it open.
struct LocalTarget {
    browser: LocalBrowser,
    _pin: Option<ProfilePin>,
}

impl Drop for LocalTarget {
    fn drop(&mut self) {
        self.browser.close();
    }
}

/// A computer task's desktop lease (issue 25 item 1; seed 003 "Leases"): released when dropped,
/// so every path that lets go of the task's target — done, failure, cancel, timeout, shutdown
/// — releases it; a failed release is retried once.
struct DesktopLease {
    leases: crate::lease::Leases,
    device: String,
    session: String,
    /// This open took the lease (it was not the conversation's already).
    taken: bool,
}

impl Drop for DesktopLease {
    fn drop(&mut self) {
        if !self.taken {
            return;
        }
        let (leases, device, session) = (&self.leases, &self.device, &self.session);
        if let Err(e) = release_retried(|| leases.release(device, session).map(|_| ())) {
            log::warn!("desktop lease not released: {}", e.code());
        }
    }
}

/// Runs `release`, and once more when it fails: the second answer is the outcome.
fn release_retried(mut release: impl FnMut() -> Result<()>) -> Result<()> {
    release().or_else(|_| release())
}

/// What the task service may reach of the gateway.
#[derive(Default)]
pub(super) struct Host {
    gateway: RwLock<Option<Weak<Inner>>>,
    launch: RwLock<LaunchOptions>,
}

impl Host {
    pub(super) fn attach(&self, gw: &Gateway, launch: LaunchOptions) {
        *self.gateway.write() = Some(Arc::downgrade(&gw.inner));
        *self.launch.write() = launch;
    }

    fn gateway(&self) -> Result<Gateway> {
        let inner = self
            .gateway
            .read()
            .as_ref()
            .and_then(Weak::upgrade)
            .ok_or(Error::GatewayClosed)?;
        let gw = Gateway { inner };
        gw.check_open()?;
        Ok(gw)
    }
}

impl TaskHost for Host {
    fn has_text_helper(&self) -> bool {
        self.gateway()
            .is_ok_and(|gw| gw.config().config.gateway.jev.thinking.is_some())
    }

    fn text_helper(
        &self,
        owner: &TaskOwner,
        instructions: &str,
        input: &str,
    ) -> Result<Option<String>> {
        let request = crate::jev::ThinkRequest {
            agent_id: owner.agent_id.clone(),
            instructions: instructions.to_string(),
            input: input.to_string(),
            timeout_ms: None,
        };
        Ok(self.gateway()?.think(&request)?.text)
    }

    fn task_gate(&self, owner: &TaskOwner, target: &TaskTarget) -> Result<BrowserTaskGrant> {
        // The configuration live at this call: a reload applies to the next gate.
        let config = &self.gateway()?.config().config;
        match target {
            TaskTarget::Computer { .. } => config.computer_task_gate(&owner.agent_id),
            _ => config.browser_task_gate(&owner.agent_id),
        }
    }

    fn evaluate(&self, call: &EvaluateCall, cancel: &CancelToken) -> Result<Evaluation> {
        self.gateway()?.evaluate_with_cancel(call, cancel)
    }

    fn open_target(
        &self,
        owner: &TaskOwner,
        target: &TaskTarget,
        access: Option<&CancelToken>,
    ) -> Result<OpenTarget> {
        let gw = self.gateway()?;
        match target {
            TaskTarget::Local { profile } => {
                let mut options = self.launch.read().clone();
                options.clock = Arc::clone(gw.clock());
                // A profile is the lease manager's, pinned for the task's whole life before
                // Chromium opens it (issue 21 item 5): an active thread session on it makes
                // this BROWSER_CONTEXT_BUSY, an idle one is closed (its profile persisted)
                // first. The organization is the owner's principal id (see `crate::lease`).
                let pin = match profile {
                    None => None,
                    Some(key) => {
                        let holder = crate::ids::random_id("task_")?;
                        let leases = gw.leases().clone();
                        let hash = leases.pin_profile(&owner.principal_id, key, &holder)?;
                        Some(ProfilePin {
                            leases,
                            hash,
                            holder,
                        })
                    }
                };
                if let Some(pin) = &pin {
                    let dir = gw.inner.data_dir.join("profiles").join(&pin.hash);
                    // On failure the pin drops here: the profile is let go.
                    crate::browser::create_private_dir(&dir, true)?;
                    options.profile_dir = Some(dir);
                }
                drop(gw);
                // A failed launch drops the pin too.
                let browser = LocalBrowser::launch(options)?;
                let closer = LocalTarget {
                    browser: browser.clone(),
                    _pin: pin,
                };
                Ok(OpenTarget {
                    backend: Arc::new(browser) as Arc<dyn BrowserBackend>,
                    // Closing drops the closer: the browser is closed, then the pin ends.
                    close: Box::new(move || drop(closer)),
                })
            }
            TaskTarget::Device { device_id } => {
                // The conversation takes the device's control lease (refused while another
                // holds it), then the tab's lease for the task's life.
                // Only the principal's own device: checked before any lease is taken, so a
                // stranger's task cannot even hold someone else's device.
                if !gw
                    .devices(&owner.principal_id)?
                    .iter()
                    .any(|d| d.id == *device_id)
                {
                    return Err(Error::DeviceNotPaired);
                }
                gw.leases().acquire(device_id, &owner.conversation_id)?;
                let target =
                    gw.device_target(&owner.principal_id, &owner.conversation_id, device_id)?;
                let lease = target.tab_lease(TabLeaseArgs {
                    action: LeaseAction::Acquire,
                    lease_id: None,
                })?;
                let target = Arc::new(target);
                let releaser = Arc::clone(&target);
                Ok(OpenTarget {
                    backend: target as Arc<dyn BrowserBackend>,
                    close: Box::new(move || {
                        // Best effort: an offline device's tab lease expires on its own.
                        let _ = releaser.tab_lease(TabLeaseArgs {
                            action: LeaseAction::Release,
                            lease_id: lease.lease_id,
                        });
                    }),
                })
            }
            TaskTarget::Computer { device_id } => {
                // Only the principal's own computer: checked before any lease is taken.
                let device = gw
                    .devices(&owner.principal_id)?
                    .into_iter()
                    .find(|d| d.id == *device_id)
                    .ok_or(Error::DeviceNotPaired)?;
                if device.capability != Capability::Computer {
                    return Err(Error::DeviceCapabilityMismatch);
                }
                // One desktop lease for the run: the conversation takes the device's control
                // lease now (refused while another holds it); the guard lets it go on every
                // exit path — the close, a failure below, a panic, shutdown.
                // A lease the conversation already held (another of its sessions, an
                // inspection beside a live task) is renewed, not taken: left to its holder.
                let grant = gw.leases().acquire(device_id, &owner.conversation_id)?;
                let guard = DesktopLease {
                    leases: gw.leases().clone(),
                    device: device_id.clone(),
                    session: owner.conversation_id.clone(),
                    taken: grant.acquired,
                };
                let computer =
                    gw.computer_target(&owner.principal_id, &owner.conversation_id, device_id)?;
                let clock = Arc::clone(gw.clock());
                drop(gw);
                // A task's run watches the device's connection while it is open (a disconnect
                // revokes its access), and first asks the person for access (seed 003 "Device
                // sessions and access requests"): an unanswered request ends after five
                // minutes with COMPUTER_ACCESS_TIMEOUT, a refusal is CONSENT_REQUIRED; either
                // way nothing was performed and the guards let the device go.
                let watch = access.map(|_| computer.watch_connection());
                if let Some(cancel) = access {
                    computer.request_access(cancel)?;
                }
                let target = ComputerTarget::new(computer, clock);
                Ok(OpenTarget {
                    backend: Arc::new(target) as Arc<dyn BrowserBackend>,
                    close: Box::new(move || {
                        drop(watch);
                        drop(guard);
                    }),
                })
            }
        }
    }

    fn computer_connection(&self, owner: &TaskOwner, device_id: &str) -> ComputerConnection {
        match self.gateway().and_then(|gw| {
            gw.computer_target(&owner.principal_id, &owner.conversation_id, device_id)
        }) {
            Ok(computer) => computer.check_connection(),
            Err(_) => ComputerConnection::Unknown,
        }
    }

    fn inspector(&self, owner: &TaskOwner, target: &TaskTarget) -> Option<Arc<dyn BrowserBackend>> {
        let device_id = target.device_id()?;
        let gw = self.gateway().ok()?;
        // The principal's own device only; no lease is taken (a status read needs none).
        if !gw
            .devices(&owner.principal_id)
            .ok()?
            .iter()
            .any(|d| d.id == *device_id)
        {
            return None;
        }
        if let TaskTarget::Computer { .. } = target {
            let device = gw
                .computer_target(&owner.principal_id, &owner.conversation_id, device_id)
                .ok()?;
            let clock = Arc::clone(gw.clock());
            return Some(Arc::new(ComputerTarget::new(device, clock)) as Arc<dyn BrowserBackend>);
        }
        let target = gw
            .device_target(&owner.principal_id, &owner.conversation_id, device_id)
            .ok()?;
        Some(Arc::new(target) as Arc<dyn BrowserBackend>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    // Seed 003 "Leases": a failed release is retried once, and only once.
    #[test]
    fn r_computer_a_failed_desktop_lease_release_is_retried_once() {
        for (failures, calls, ok) in [(0, 1, true), (1, 2, true), (2, 2, false), (5, 2, false)] {
            let n = Cell::new(0u32);
            let answer = release_retried(|| {
                n.set(n.get() + 1);
                if n.get() <= failures {
                    Err(Error::DeviceOffline)
                } else {
                    Ok(())
                }
            });
            assert_eq!((n.get(), answer.is_ok()), (calls, ok), "{failures}");
        }
    }
}
