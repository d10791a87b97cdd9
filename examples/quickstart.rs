//! The quickstart: what jevgate does today, end to end, with no network and no key.
//!
//! `cargo run --release --example quickstart`
//!
//! It validates a configuration (and shows how a bad one is rejected with the JSON path of the
//! offending value), opens a gateway on a data directory (one SQLite file), reloads the live
//! configuration, runs the local doctor, and closes. Later modules grow it into the browser demo.

use jevgate::{Config, Gateway, GatewayOptions};

const CONFIG: &str = r#"{
  "gateway": {
    "jev": {
      "enabled": true,
      "provider": "local",
      "allowedAgentIds": ["assistant"],
      "features": { "browserTasks": { "enabled": true } }
    }
  },
  "agents": [{ "id": "assistant" }, { "id": "intern", "jev": { "enabled": false } }]
}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("jevgate {} quickstart\n", env!("CARGO_PKG_VERSION"));

    // 1. Configuration: typed, unknown keys rejected, every rule checked with a JSON path.
    let config = Config::from_json_str(CONFIG)?;
    println!(
        "config ok: Jev for assistant = {}, for intern = {}",
        config.jev_allowed("assistant"),
        config.jev_allowed("intern")
    );
    let bad = r#"{"gateway":{"jev":{"enabled":true,"provider":"typesafe","model":"jev-1.13.0","apiKeyEnv":"OPENAI_API_KEY"}}}"#;
    let err = Config::from_json_str(bad).unwrap_err();
    println!(
        "rejected: code={} path={} ({})",
        err.code(),
        err.path().unwrap_or(""),
        err
    );

    // 2. A gateway on a data directory: one SQLite file (WAL, synchronous=FULL).
    let dir = match std::env::var_os("JEVGATE_DATA_DIR") {
        Some(d) => tempfile::Builder::new()
            .prefix("quickstart-")
            .tempdir_in(d)?,
        None => tempfile::tempdir()?,
    };
    let gw = Gateway::open(GatewayOptions::new(dir.path(), config))?;
    println!(
        "\ngateway open: store {} (schema v{}), config generation {}",
        gw.store().path().display(),
        gw.store().schema_version()?,
        gw.generation()
    );

    // 3. Live reload: validated as a whole, swapped atomically, generation bumped.
    let generation = gw.reload_json(r#"{"gateway":{"jev":{"enabled":true,"provider":"local","features":{"browserSteps":{"enabled":true}}}}}"#)?;
    println!("reloaded: generation {generation}");
    let refused = gw
        .reload_json(r#"{"gateway":{"jev":{"maxQuestions":100}}}"#)
        .unwrap_err();
    println!(
        "refused reload ({}), still generation {}",
        refused.path().unwrap_or(""),
        gw.generation()
    );

    // 4. Doctor: local checks only, never a network call, never a key in the report.
    let report = gw.doctor()?;
    println!("\ndoctor ok={}", report.ok);
    for check in &report.checks {
        println!("  {:<16} {:?}: {}", check.name, check.status, check.detail);
    }

    // 5. Leases: one conversation drives a device; the person can always take it back.
    let leases = gw.leases();
    leases.set_device_owner("laptop", "person")?;
    let grant = leases.acquire("laptop", "conversation-a")?;
    println!(
        "\nconversation-a acquired the laptop (expires at {} ms)",
        grant.expires_at
    );
    let elsewhere = leases.acquire("laptop", "conversation-b").unwrap_err();
    println!("conversation-b: {} ({})", elsewhere.code(), elsewhere);
    leases.take_back("laptop", &jevgate::lease::ControlCaller::owner("person"))?;
    let status = leases.status("laptop", &jevgate::lease::ControlCaller::owner("person"))?;
    println!("person took it back: {}", serde_json::to_string(&status)?);
    let revoked = leases.acquire("laptop", "conversation-a").unwrap_err();
    println!("conversation-a is told once: {}", revoked.code());

    // 6. Close: joins the gateway's threads and releases the data directory.
    gw.close();
    println!("\ngateway closed");
    Ok(())
}
