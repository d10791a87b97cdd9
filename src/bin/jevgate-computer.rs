//! `jevgate-computer`: the Linux reference computer helper (issue 25), for now its observe/act
//! core for people and tests. It observes the front application of the desktop through AT-SPI
//! (the accessibility bus of `DBUS_SESSION_BUS_ADDRESS`, or `AT_SPI_BUS_ADDRESS`) and acts
//! through AT-SPI actions and XTest keys (`DISPLAY`).
//!
//! It must never print a sensitive field's value and never write an application's names or text
//! anywhere but its standard output, as the answer to the command that asked. Exit status: 0 on
//! success, 1 when the desktop refused or failed (the error's code on standard error), 2 on a
//! usage error.

use std::process::ExitCode;

use jevgate::unstable::computer::{model, Keyboard, Session};

const USAGE: &str = "usage: jevgate-computer [--app NAME] observe
       jevgate-computer [--app NAME] press LABEL
       jevgate-computer key NAME

observe   print the front application's observation (JSON)
press     press the one control whose name is exactly LABEL (an AT-SPI action)
key       press and release one key through XTest (Return, BackSpace, 5, +, …)
--app     the application with this accessible name instead of the front one";

fn main() -> ExitCode {
    let mut app: Option<String> = None;
    let mut rest: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--app" => match args.next() {
                Some(v) => app = Some(v),
                None => return usage(),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ => rest.push(a),
        }
    }
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    match rest.as_slice() {
        ["observe"] => run(|| {
            let mut s = Session::connect()?;
            let obs = s.observe(app.as_deref())?;
            println!(
                "{}",
                serde_json::to_string_pretty(&obs).unwrap_or_else(|_| "{}".into())
            );
            Ok(())
        }),
        ["press", label] => run(|| {
            let mut s = Session::connect()?;
            let obs = s.observe(app.as_deref())?;
            let found = model::find_by_name(&obs, label);
            match found.as_slice() {
                [one] => Ok(s.press(&one.reference)?),
                [] => Err("TARGET_NOT_FOUND: no control with that name".into()),
                _ => Err("TARGET_AMBIGUOUS: more than one control with that name".into()),
            }
        }),
        ["key", name] => run(|| Ok(Keyboard::connect()?.key(name)?)),
        _ => usage(),
    }
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}

fn run(f: impl FnOnce() -> Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    match f() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jevgate-computer: {e}");
            ExitCode::from(1)
        }
    }
}
