//! `jevgate observe URL [--format json|snapshot] [--repeat N]`: what a model would see of a
//! page, read by a fresh local Chromium (issue 8 §6).
//!
//! Prints the observation JSON (or the snapshot text) of the settled page on stdout; with
//! `--repeat N` observes N times and ends stderr with
//! `observe: median_ms=<n> p90_ms=<n> chars=<n>` (observation time only, not browser start).
//! An open dialog is part of the observation, never a hang. Never prints anything but the
//! page's own content and jevgate's timing line.

use super::Usage;
use crate::common::error_line;
use jevgate::browser::{BrowserBackend, LaunchOptions, LocalBrowser, SnapshotArgs};
use jevgate::clock::{Clock, SystemClock};
use std::process::ExitCode;

pub fn observe(args: &[String]) -> Result<ExitCode, Usage> {
    let mut url = None;
    let mut snapshot = false;
    let mut repeat: Option<usize> = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--format" => match it.next().map(String::as_str) {
                Some("json") => snapshot = false,
                Some("snapshot") => snapshot = true,
                _ => return Err(Usage("--format takes json or snapshot".into())),
            },
            "--repeat" => {
                let n = it
                    .next()
                    .and_then(|v| v.parse::<usize>().ok())
                    .filter(|n| (1..=10_000).contains(n))
                    .ok_or_else(|| Usage("--repeat takes a number from 1 to 10000".into()))?;
                repeat = Some(n);
            }
            flag if flag.starts_with("--") => {
                return Err(Usage(format!("unknown flag `{}`", flag.escape_debug())))
            }
            other if url.is_none() => url = Some(other.to_string()),
            _ => return Err(Usage("observe takes exactly one URL".into())),
        }
    }
    let url = url.ok_or_else(|| Usage("observe needs a URL".into()))?;
    let fail = |e: jevgate::Error| {
        println!("{}", error_line(&e));
        Ok(ExitCode::from(1))
    };
    let browser = match LocalBrowser::launch(LaunchOptions::default()) {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    let outcome = run(&browser, &url, snapshot, repeat.unwrap_or(1));
    browser.close();
    match outcome {
        Ok((output, times)) => {
            println!("{output}");
            if repeat.is_some() {
                let mut sorted = times.clone();
                sorted.sort_unstable();
                let pick = |q: f64| sorted[((sorted.len() as f64 - 1.0) * q).round() as usize];
                eprintln!(
                    "observe: median_ms={} p90_ms={} chars={}",
                    pick(0.5),
                    pick(0.9),
                    output.chars().count()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => fail(e),
    }
}

fn run(
    browser: &LocalBrowser,
    url: &str,
    snapshot: bool,
    repeat: usize,
) -> jevgate::Result<(String, Vec<u64>)> {
    browser.navigate(url)?;
    let mut output = String::new();
    let mut times = Vec::with_capacity(repeat);
    // Measures real time on purpose (the timings printed), through the system clock (R-CLK).
    let clock = SystemClock::new();
    for _ in 0..repeat {
        let started = clock.now();
        output = if snapshot {
            browser.snapshot(SnapshotArgs::default())?.text
        } else {
            let obs = browser.observe()?;
            serde_json::to_string_pretty(&obs).map_err(|_| jevgate::Error::Internal {
                reason: "observation does not serialize".into(),
            })?
        };
        times.push(u64::try_from((clock.now() - started).as_millis()).unwrap_or(u64::MAX));
    }
    Ok((output, times))
}
