//! The device registry (R-DEV-PAIR, R-DEV-VER): pairing, unpairing, the owner's inventory, and
//! token authentication for the channel, stored in the gateway's SQLite file or, on the shared
//! store (issue 23), in the fleet's PostgreSQL `devices` table — the same statements on both —
//! so a device paired through one process authenticates to any other, and an unpair or a
//! re-pair anywhere ends the old token everywhere — including on an open connection: on the
//! shared store the same transaction notifies the fleet (`remote.rs` closes the connection in
//! whichever process holds it). A re-pair always moves `paired_at` forward, so it tells the
//! connection of the old token from one of the new.
//!
//! A device token is 32 random bytes from `ring`, returned once by [`Registry::pair`] and
//! stored only as its SHA-256 hash; re-pairing the same (owner, installation) keeps the device
//! id and replaces the hash, so the old token stops working. This module must never log, store
//! or return a token after `pair` returns it, and never answers one owner about another owner's
//! device.

use crate::clock::SharedClock;
use crate::ids::{random_hex, random_id};
use crate::store::db::{dbp, Db, DbRow, Engine};
use crate::store::Records;
use crate::{Error, Result};
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};

/// The inventory label of a browser that can be driven.
pub const LABEL_BROWSER: &str = "browser";
/// The inventory label of a browser whose extension last authenticated below protocol 2.
pub const LABEL_BROWSER_OUTDATED: &str = "browser (extension out of date — update to use)";
/// The inventory label of a shell (CLI) worker.
pub const LABEL_SHELL: &str = "shell";
/// The inventory label of a computer helper (issue 25: `jevgate-computer`).
pub const LABEL_COMPUTER: &str = "computer";

/// The browser a worker runs in, as sent when pairing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserInfo {
    /// Browser name (`Chrome`).
    pub name: String,
    /// Browser version (`131.0`).
    pub version: String,
}

/// The pairing request body: `{installationId, name, browser: {name, version}}`. Without
/// `browser` the device is a shell worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PairRequest {
    /// The worker's stable installation id (1..=256 printable characters).
    pub installation_id: String,
    /// A name the person recognises (1..=256 characters).
    pub name: String,
    /// The browser, for browser workers.
    #[serde(default)]
    pub browser: Option<BrowserInfo>,
}

impl PairRequest {
    /// `INVALID_ARGUMENT` naming the first field out of bounds (1..=256 characters, the
    /// browser's 1..=128, no control characters); never echoes a value.
    pub(crate) fn validate(&self) -> Result<()> {
        text_arg("installationId", &self.installation_id, 256)?;
        text_arg("name", &self.name, 256)?;
        if let Some(b) = &self.browser {
            text_arg("browser.name", &b.name, 128)?;
            text_arg("browser.version", &b.version, 128)?;
        }
        Ok(())
    }

    /// Parses `{"installationId","name","browser"?:{"name","version"}}` — the C
    /// `request_json`, the Python `request` dict — or `INVALID_ARGUMENT` (`request_json`).
    pub fn from_json(json: &str) -> Result<PairRequest> {
        crate::args::from_json(
            "request_json",
            json,
            "{installationId, name, browser?: {name, version}}",
        )
    }
}

/// What a device can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    /// A browser worker: serves the browser tools.
    Browser,
    /// A shell (CLI) worker: never version-checked, never serves browser tools.
    Shell,
    /// A computer helper (issue 25): serves the computer helper contract, never browser tools.
    Computer,
}

impl Capability {
    /// The stored spelling (the `capability` column, here and in the shared store).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Capability::Browser => "browser",
            Capability::Shell => "shell",
            Capability::Computer => "computer",
        }
    }

    /// Reads the stored spelling back; anything else is a shell worker (serves nothing).
    pub(crate) fn from_stored(s: &str) -> Capability {
        match s {
            "browser" => Capability::Browser,
            "computer" => Capability::Computer,
            _ => Capability::Shell,
        }
    }
}

/// One device of the owner's inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    /// The device id (`dev_…`), what `deviceId` takes.
    pub id: String,
    /// The name given when pairing.
    pub name: String,
    /// `browser` or `shell`.
    pub capability: Capability,
    /// The inventory label: [`LABEL_BROWSER`], [`LABEL_BROWSER_OUTDATED`] or [`LABEL_SHELL`].
    pub label: String,
    /// The browser, for browser devices.
    pub browser: Option<BrowserInfo>,
    /// Whether its worker is connected right now.
    pub online: bool,
    /// Whether browser tools can target it (a browser that last authenticated with protocol
    /// ≥ 2, or never yet).
    pub browser_tools: bool,
    /// The channel protocol it last authenticated with (`0` = omitted), if it ever did.
    pub last_protocol: Option<u64>,
    /// When it was (last re-)paired, Unix ms.
    pub paired_at: i64,
    /// When its worker last authenticated, Unix ms.
    pub last_seen_at: Option<i64>,
    /// On the shared store (issue 23 item 4): its worker is connected to another live process
    /// of the fleet, not this one (`online` is then true; calls here are carried there).
    /// Serialized only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub connected_elsewhere: bool,
}

/// A device token, shown once. Its `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct DeviceToken(String);

impl DeviceToken {
    /// A token a worker was given at pairing (read from its own secret store).
    pub fn new(token: impl Into<String>) -> DeviceToken {
        DeviceToken(token.into())
    }

    /// The token, to hand to the worker once (`authorization: "Device <token>"`).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for DeviceToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceToken(<redacted>)")
    }
}

/// The result of pairing: the device and its token (returned this once).
#[derive(Debug, Clone)]
pub struct Pairing {
    /// The device as listed in the inventory.
    pub device: Device,
    /// The device token; store it in the worker, it is never shown again.
    pub token: DeviceToken,
}

/// `{"device":{…},"token":"…"}`: the one place a token is written out, for the caller who just
/// paired (C and Python return this once; the token is never shown again).
impl Serialize for Pairing {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Pairing", 2)?;
        st.serialize_field("device", &self.device)?;
        st.serialize_field("token", self.token.expose())?;
        st.end()
    }
}

/// A device row as the gateway uses it internally.
#[derive(Debug, Clone)]
pub(crate) struct DeviceRecord {
    pub id: String,
    pub owner: String,
    pub name: String,
    pub capability: Capability,
    pub browser: Option<BrowserInfo>,
    pub last_protocol: Option<u64>,
    pub paired_at: i64,
    pub last_seen_at: Option<i64>,
}

impl DeviceRecord {
    /// A browser that last authenticated below protocol 2 (R-DEV-VER).
    pub fn outdated(&self) -> bool {
        self.capability == Capability::Browser
            && self
                .last_protocol
                .is_some_and(|p| p < super::frames::PROTOCOL_VERSION)
    }

    pub fn to_device(&self, online: bool) -> Device {
        let label = match self.capability {
            Capability::Shell => LABEL_SHELL,
            Capability::Computer => LABEL_COMPUTER,
            Capability::Browser if self.outdated() => LABEL_BROWSER_OUTDATED,
            Capability::Browser => LABEL_BROWSER,
        };
        Device {
            id: self.id.clone(),
            name: self.name.clone(),
            capability: self.capability,
            label: label.to_string(),
            browser: self.browser.clone(),
            online,
            browser_tools: self.capability == Capability::Browser && !self.outdated(),
            last_protocol: self.last_protocol,
            paired_at: self.paired_at,
            last_seen_at: self.last_seen_at,
            connected_elsewhere: false,
        }
    }
}

pub(crate) fn text_arg(name: &'static str, value: &str, max: usize) -> Result<()> {
    let n = value.chars().count();
    if n == 0 || n > max || value.chars().any(char::is_control) {
        return Err(Error::InvalidArgument {
            name,
            reason: format!("must be 1 to {max} characters without control characters"),
        });
    }
    Ok(())
}

fn token_hash(token: &str) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, token.as_bytes())
        .as_ref()
        .to_vec()
}

const COLUMNS: &str = "device_id, owner, name, capability, browser_name, browser_version, \
                       last_protocol, paired_at, last_seen_at";

fn row(r: &DbRow) -> rusqlite::Result<DeviceRecord> {
    let capability: String = r.get(3)?;
    let browser_name: Option<String> = r.get(4)?;
    let browser_version: Option<String> = r.get(5)?;
    let protocol: Option<i64> = r.get(6)?;
    Ok(DeviceRecord {
        id: r.get(0)?,
        owner: r.get(1)?,
        name: r.get(2)?,
        capability: Capability::from_stored(&capability),
        browser: match (browser_name, browser_version) {
            (Some(name), Some(version)) => Some(BrowserInfo { name, version }),
            _ => None,
        },
        last_protocol: protocol.map(|p| p.max(0) as u64),
        paired_at: r.get(7)?,
        last_seen_at: r.get(8)?,
    })
}

/// The fleet's NOTIFY channel of devices (`remote.rs` listens to it): carried commands, and
/// the credential changes sent here.
pub(crate) const CHANNEL: &str = "jevgate_device";

/// The prefix of the NOTIFY payload `unpaired <device>`, sent when a device is unpaired or
/// re-paired: its connection closes wherever it is unless it authenticated with the current
/// pairing.
pub(crate) const UNPAIRED: &str = "unpaired ";

/// On the shared store, tells every process of the fleet that `device_id` was unpaired
/// (`gone`) or (re-)paired, in the transaction that did it (PostgreSQL sends it on commit): the
/// process holding its connection closes it unless it authenticated with the current pairing
/// (`remote.rs`). An unpaired device's connection row goes in the same transaction, so no
/// process lists or calls it afterwards. Nothing on SQLite (one process, whose hub the caller
/// closes).
fn credential_changed(db: &dyn Db, device_id: &str, gone: bool) -> rusqlite::Result<()> {
    if db.engine() == Engine::Postgres {
        if gone {
            db.execute(
                "DELETE FROM jevgate_device_connections WHERE device_id = ?1",
                dbp![device_id],
            )?;
        }
        let payload = format!("{UNPAIRED}{device_id}");
        db.execute("SELECT pg_notify(?1, ?2)", dbp![CHANNEL, payload])?;
    }
    Ok(())
}

/// The device table.
#[derive(Debug)]
pub(crate) struct Registry {
    records: Records,
    clock: SharedClock,
}

impl Registry {
    pub fn new(records: Records, clock: SharedClock) -> Registry {
        Registry { records, clock }
    }

    /// Pairs (or re-pairs) `request.installation_id` for `owner` (R-DEV-PAIR). One statement
    /// keyed by (owner, installation), so two processes re-pairing the same worker at once
    /// leave one device whose token is the last one written.
    pub fn pair(&self, owner: &str, request: &PairRequest) -> Result<(DeviceRecord, DeviceToken)> {
        let capability = if request.browser.is_some() {
            Capability::Browser
        } else {
            Capability::Shell
        };
        self.pair_as(owner, request, capability)
    }

    /// [`Registry::pair`] as `capability` (a computer helper, issue 25).
    pub fn pair_as(
        &self,
        owner: &str,
        request: &PairRequest,
        capability: Capability,
    ) -> Result<(DeviceRecord, DeviceToken)> {
        text_arg("owner", owner, 256)?;
        request.validate()?;
        let token = DeviceToken(format!("jgd_{}", random_hex(32)?));
        let hash = token_hash(&token.0);
        let new_id = random_id("dev_")?;
        let now = self.clock.wall_millis();
        let id: String = self.records.write("pair a device", |db| {
            db.query_row(
                "INSERT INTO devices (device_id, owner, installation_id, name, capability,
                    browser_name, browser_version, token_hash, last_protocol, paired_at, last_seen_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, ?9, NULL)
                 ON CONFLICT (owner, installation_id) DO UPDATE SET name = excluded.name,
                    capability = excluded.capability, browser_name = excluded.browser_name,
                    browser_version = excluded.browser_version, token_hash = excluded.token_hash,
                    last_protocol = NULL,
                    paired_at = CASE WHEN excluded.paired_at > devices.paired_at
                                     THEN excluded.paired_at ELSE devices.paired_at + 1 END
                 RETURNING device_id",
                dbp![
                    new_id,
                    owner,
                    request.installation_id,
                    request.name,
                    capability.as_str(),
                    request.browser.as_ref().map(|b| &b.name),
                    request.browser.as_ref().map(|b| &b.version),
                    hash,
                    now
                ],
                |r| r.get(0),
            )
            .and_then(|id: String| credential_changed(db, &id, false).map(|()| id))
        })?;
        let record = self.get_any(&id)?.ok_or_else(|| Error::Internal {
            reason: "a paired device vanished".into(),
        })?;
        Ok((record, token))
    }

    /// Removes `owner`'s device; `false` when there is none with that id for that owner.
    pub fn unpair(&self, owner: &str, device_id: &str) -> Result<bool> {
        let n = self.records.write("unpair a device", |db| {
            let n = db.execute(
                "DELETE FROM devices WHERE device_id = ?1 AND owner = ?2",
                dbp![device_id, owner],
            )?;
            credential_changed(db, device_id, true).map(|()| n)
        })?;
        Ok(n > 0)
    }

    /// Forgets `device_id` whoever owns it (its worker unpaired it over its own authenticated
    /// connection); whether it was paired.
    pub fn unpair_device(&self, device_id: &str) -> Result<bool> {
        let n = self.records.write("unpair a device", |db| {
            let n = db.execute("DELETE FROM devices WHERE device_id = ?1", dbp![device_id])?;
            credential_changed(db, device_id, true).map(|()| n)
        })?;
        Ok(n > 0)
    }

    /// `owner`'s devices, oldest pairing first.
    pub fn list(&self, owner: &str) -> Result<Vec<DeviceRecord>> {
        self.records.read("list devices", |db| {
            db.query_map(
                &format!(
                    "SELECT {COLUMNS} FROM devices WHERE owner = ?1 ORDER BY paired_at, device_id"
                ),
                dbp![owner],
                row,
            )
        })
    }

    /// `owner`'s device `device_id` (another owner's is `None`).
    pub fn get(&self, owner: &str, device_id: &str) -> Result<Option<DeviceRecord>> {
        Ok(self.get_any(device_id)?.filter(|d| d.owner == owner))
    }

    fn get_any(&self, device_id: &str) -> Result<Option<DeviceRecord>> {
        self.records.read("read a device", |db| {
            db.query_row(
                &format!("SELECT {COLUMNS} FROM devices WHERE device_id = ?1"),
                dbp![device_id],
                row,
            )
            .optional()
        })
    }

    /// Every (device, owner), for restoring lease ownership on open.
    pub fn owners(&self) -> Result<Vec<(String, String)>> {
        self.records.read("read device owners", |db| {
            db.query_map("SELECT device_id, owner FROM devices", dbp![], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
        })
    }

    /// The device whose token this is, if any.
    pub fn authenticate(&self, token: &str) -> Result<Option<DeviceRecord>> {
        let hash = token_hash(token);
        self.records.read("authenticate a device", |db| {
            db.query_row(
                &format!("SELECT {COLUMNS} FROM devices WHERE token_hash = ?1"),
                dbp![hash],
                row,
            )
            .optional()
        })
    }

    /// Records the protocol a worker with a valid token authenticated with (`None` = omitted,
    /// stored as 0) and when.
    pub fn record_authentication(&self, device_id: &str, protocol: Option<u64>) -> Result<()> {
        let now = self.clock.wall_millis();
        let protocol = protocol.map_or(0, |p| p.min(i64::MAX as u64) as i64);
        self.records
            .write("record a device's authentication", |db| {
                db.execute(
                    "UPDATE devices SET last_protocol = ?2, last_seen_at = ?3 WHERE device_id = ?1",
                    dbp![device_id, protocol, now],
                )
            })?;
        Ok(())
    }
}
