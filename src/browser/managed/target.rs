//! Targets of the managed tools (issue 15, seed 001: "a target is either a snapshot ref or a
//! plain CSS/role/text selector"): the one parser of the syntax and the matching of role and
//! text selectors against an observation's controls.
//!
//! Syntax, exactly one of:
//! * a ref of the latest snapshot: `e5`, `f1e3` (inside the first cross-origin frame);
//! * `css=<selector>` — matched in the page library's isolated world against the main
//!   document (open shadow roots and frames are not searched by CSS; use role/text there);
//! * `role=<role>` or `role=<role>[name="<accessible name>"]` (single or double quotes);
//! * `text=<accessible name>` (optionally quoted).
//!
//! Names compare case-insensitively with whitespace collapsed, whole name to whole name. It
//! never guesses: the caller refuses anything but exactly one match. It never logs a target.

use crate::observation::Control;

/// A parsed target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Ref(String),
    Css(String),
    Role { role: String, name: Option<String> },
    Text(String),
}

fn is_ref(s: &str) -> bool {
    let rest = match s.strip_prefix('f') {
        Some(r) => {
            let digits = r.chars().take_while(char::is_ascii_digit).count();
            if digits == 0 {
                return false;
            }
            &r[digits..]
        }
        None => s,
    };
    rest.strip_prefix('e')
        .is_some_and(|d| !d.is_empty() && d.len() <= 9 && d.chars().all(|c| c.is_ascii_digit()))
}

fn unquote(s: &str) -> &str {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    s
}

/// Parses a target; `None` when it has none of the shapes (the caller names the field).
pub(crate) fn parse_target(s: &str) -> Option<Target> {
    let s = s.trim();
    if s.is_empty() || s.len() > 4096 {
        return None;
    }
    if is_ref(s) {
        return Some(Target::Ref(s.to_string()));
    }
    if let Some(css) = s.strip_prefix("css=") {
        let css = css.trim();
        return (!css.is_empty()).then(|| Target::Css(css.to_string()));
    }
    if let Some(text) = s.strip_prefix("text=") {
        let text = unquote(text);
        return (!text.trim().is_empty()).then(|| Target::Text(text.to_string()));
    }
    if let Some(rest) = s.strip_prefix("role=") {
        let (role, name) = match rest.find('[') {
            None => (rest.trim(), None),
            Some(at) => {
                let attr = rest[at + 1..].trim().strip_suffix(']')?;
                let value = attr
                    .trim()
                    .strip_prefix("name")?
                    .trim_start()
                    .strip_prefix('=')?;
                let value = value.trim();
                let quoted = (value.starts_with('"') && value.ends_with('"') && value.len() >= 2)
                    || (value.starts_with('\'') && value.ends_with('\'') && value.len() >= 2);
                if !quoted {
                    return None;
                }
                (rest[..at].trim(), Some(unquote(value).to_string()))
            }
        };
        if role.is_empty() || !role.chars().all(|c| c.is_ascii_alphabetic() || c == '-') {
            return None;
        }
        return Some(Target::Role {
            role: role.to_ascii_lowercase(),
            name,
        });
    }
    None
}

fn squash(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The controls a role or text target matches (empty for refs and CSS, which resolve
/// elsewhere).
pub(crate) fn matching<'a>(target: &Target, controls: &'a [Control]) -> Vec<&'a Control> {
    match target {
        Target::Role { role, name } => {
            let want = name.as_deref().map(squash);
            controls
                .iter()
                .filter(|c| c.role.eq_ignore_ascii_case(role))
                .filter(|c| want.as_ref().is_none_or(|w| squash(&c.name) == *w))
                .collect()
        }
        Target::Text(text) => {
            let want = squash(text);
            controls
                .iter()
                .filter(|c| squash(&c.name) == want)
                .collect()
        }
        Target::Ref(_) | Target::Css(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_into_one_shape_or_none() {
        assert_eq!(parse_target("e5"), Some(Target::Ref("e5".into())));
        assert_eq!(parse_target("f2e13"), Some(Target::Ref("f2e13".into())));
        assert_eq!(parse_target("css=#go"), Some(Target::Css("#go".into())));
        assert_eq!(
            parse_target(r#"role=button[name="Go now"]"#),
            Some(Target::Role {
                role: "button".into(),
                name: Some("Go now".into())
            })
        );
        assert_eq!(
            parse_target("role=Checkbox"),
            Some(Target::Role {
                role: "checkbox".into(),
                name: None
            })
        );
        assert_eq!(
            parse_target("text='Press me'"),
            Some(Target::Text("Press me".into()))
        );
        for bad in [
            "",
            "e",
            "ex5",
            "f0",
            "fe5",
            "css=",
            "text=",
            "role=",
            "role=button[name=Go]",
            "role=button[id=\"x\"]",
            "#go",
            "button",
        ] {
            assert_eq!(parse_target(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn role_and_text_match_whole_names_without_guessing() {
        let c = |r: &str, role: &str, name: &str| Control {
            reference: r.into(),
            role: role.into(),
            name: name.into(),
            ..Default::default()
        };
        let controls = vec![
            c("e1", "button", "Go"),
            c("e2", "button", "Go  back"),
            c("e3", "link", "go"),
        ];
        let t = parse_target(r#"role=button[name="go"]"#).unwrap();
        assert_eq!(matching(&t, &controls).len(), 1);
        assert_eq!(
            matching(&parse_target("text=Go").unwrap(), &controls).len(),
            2
        );
        assert_eq!(
            matching(&parse_target("role=button").unwrap(), &controls).len(),
            2
        );
        assert!(matching(&parse_target("text=Gone").unwrap(), &controls).is_empty());
    }
}
