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
    }
}
