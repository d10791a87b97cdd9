//! Random identifiers and tokens from the system's secure random source (`dev_…`, `art_…`,
//! `bs_…`, device tokens).
//!
//! A bottom module: it uses only [`crate::error`], so the device registry, the artifacts and
//! the lease manager can all draw ids without leaning on one another. It must never derive an
//! id from a clock, a counter or anything a caller chose.

use crate::{Error, Result};

/// `bytes` random bytes as lowercase hex (`2 * bytes` characters).
pub(crate) fn random_hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0u8; bytes];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut buf).map_err(|_| {
        Error::Internal {
            reason: "the system random source failed".into(),
        }
    })?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A random id with a prefix (`dev_…`, `art_…`, `bs_…`): the prefix and 24 hex characters.
pub(crate) fn random_id(prefix: &str) -> Result<String> {
    Ok(format!("{prefix}{}", random_hex(12)?))
}

/// A random (version 4) UUID in its 36-character lowercase form: task ids (R-TSK).
pub(crate) fn random_uuid() -> Result<String> {
    let hex = random_hex(16)?;
    let mut b: Vec<char> = hex.chars().collect();
    b[12] = '4';
    // The variant nibble is 8, 9, a or b.
    let v = b[16].to_digit(16).unwrap_or(0);
    b[16] = char::from_digit(8 | (v & 3), 16).unwrap_or('8');
    let s: String = b.into_iter().collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &s[0..8],
        &s[8..12],
        &s[12..16],
        &s[16..20],
        &s[20..32]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_prefix_and_differ() {
        let a = random_id("dev_").unwrap();
        let b = random_id("dev_").unwrap();
        assert!(a.starts_with("dev_") && a.len() == 4 + 24, "{a}");
        assert!(a[4..]
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
        assert_eq!(random_hex(32).unwrap().len(), 64);
        let u = random_uuid().unwrap();
        assert_eq!(u.len(), 36, "{u}");
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
        assert_ne!(u, random_uuid().unwrap());
    }
}

/// Whether `s` is a UUID in its canonical text form (8-4-4-4-12 hex digits, either case).
pub(crate) fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod uuid_tests {
    #[test]
    fn r_tsk_ctl_uuid_shape() {
        assert!(super::is_uuid("1b4e28ba-2fa1-11d2-883f-0016d3cca427"));
        assert!(super::is_uuid(&super::random_uuid().unwrap()));
        for bad in [
            "",
            "1b4e28ba2fa111d2883f0016d3cca427",
            "1b4e28ba-2fa1-11d2-883f-0016d3cca42g",
            "1b4e28ba-2fa1-11d2-883f-0016d3cca4270",
            "ü1b4e28ba-2fa1-11d2-883f-0016d3cca42",
        ] {
            assert!(!super::is_uuid(bad), "{bad}");
        }
    }
}
