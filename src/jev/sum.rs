//! The distribution tolerance of R-VAL-SUM and the score check of R-VAL-SCORE, accumulated as
//! probabilities stream in.
//!
//! Rule: when every probability is a multiple of 0.01 (decided exactly on the decimal text),
//! accept |Σ−1| ≤ min(0.005·n, 0.02), else |Σ−1| ≤ 0.001. The rounded case is decided in
//! integer hundredths, so 0.99 and 1.01 made of two or more hundredths are accepted exactly,
//! whatever binary floating point does. The full-precision case compares in `f64` with a slack
//! of [`FLOAT_SLACK`], far below any digit that matters and far above the rounding error of
//! summing 255 doubles. A score must equal Σ i·pᵢ within the same tolerance.
//!
//! This module only decides; it must never change a probability.

/// Allowance for binary rounding in the full-precision comparisons (Σ of ≤255 doubles errs by
/// less than 3e-14).
pub(crate) const FLOAT_SLACK: f64 = 1e-12;

/// Running facts about one distribution.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dist {
    n: u32,
    sum: f64,
    weighted: f64,
    hundredths: bool,
    k_sum: i64,
    k_weighted: i64,
    max: f64,
}

impl Dist {
    pub fn new() -> Dist {
        Dist {
            n: 0,
            sum: 0.0,
            weighted: 0.0,
            hundredths: true,
            k_sum: 0,
            k_weighted: 0,
            max: f64::NEG_INFINITY,
        }
    }

    /// Adds probability `p` (already checked to be in [0, 1]) at position `index`;
    /// `hundredths` says whether its decimal text is a multiple of 0.01.
    #[inline(always)]
    pub fn push(&mut self, index: usize, p: f64, hundredths: bool) {
        self.n += 1;
        self.sum += p;
        self.weighted += index as f64 * p;
        if p > self.max {
            self.max = p;
        }
        if hundredths {
            // p is the double nearest k/100 with 0 ≤ k ≤ 100, so this recovers k exactly.
            let k = (p * 100.0 + 0.5) as i64;
            self.k_sum += k;
            self.k_weighted += index as i64 * k;
        } else {
            self.hundredths = false;
        }
    }

    /// The largest probability pushed.
    pub fn max(&self) -> f64 {
        self.max
    }

    /// Whether the sum is within the tolerance for this many probabilities.
    pub fn sum_ok(&self) -> bool {
        if self.hundredths {
            // |K/100 − 1| ≤ min(0.005·n, 0.02)  ⇔  2·|K − 100| ≤ min(n, 4)
            2 * (self.k_sum - 100).abs() <= i64::from(self.n.min(4))
        } else {
            (self.sum - 1.0).abs() <= 0.001 + FLOAT_SLACK
        }
    }

    /// Whether `score` equals Σ i·pᵢ within the distribution's tolerance.
    /// `score_hundredths` says whether the score's decimal text is a multiple of 0.01.
    pub fn score_ok(&self, score: f64, score_hundredths: bool) -> bool {
        if !score.is_finite() {
            return false;
        }
        if self.hundredths {
            if score_hundredths && score.abs() < 1e12 {
                let s = (score * 100.0).round() as i64;
                return 2 * (s - self.k_weighted).abs() <= i64::from(self.n.min(4));
            }
            let tol = if self.n >= 4 {
                0.02
            } else {
                0.005 * f64::from(self.n)
            };
            (score - self.weighted).abs() <= tol + FLOAT_SLACK
        } else {
            (score - self.weighted).abs() <= 0.001 + FLOAT_SLACK
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a distribution from decimal texts, as the scanner would.
    fn dist(ps: &[&str]) -> Dist {
        let mut d = Dist::new();
        for (i, t) in ps.iter().enumerate() {
            let mut lx = super::super::lex::Lexer::new(t.as_bytes());
            let n = lx.number().unwrap();
            d.push(i, n.to_f64(), n.hundredths);
        }
        d
    }

    #[test]
    fn r_val_sum_rounded_envelope_edges_by_option_count() {
        // n = 1: min(0.005, 0.02) → only exactly 1.00
        assert!(dist(&["1.00"]).sum_ok());
        assert!(!dist(&["0.99"]).sum_ok());
        // n = 2: ±0.01
        assert!(dist(&["0.50", "0.49"]).sum_ok());
        assert!(dist(&["0.51", "0.50"]).sum_ok());
        assert!(!dist(&["0.50", "0.48"]).sum_ok());
        assert!(!dist(&["0.52", "0.50"]).sum_ok());
        // n = 3: ±0.015 → ±0.01 in hundredths
        assert!(dist(&["0.33", "0.33", "0.33"]).sum_ok());
        assert!(dist(&["0.34", "0.34", "0.33"]).sum_ok());
        assert!(!dist(&["0.34", "0.34", "0.34"]).sum_ok());
        assert!(!dist(&["0.32", "0.33", "0.33"]).sum_ok());
        // n ≥ 4: ±0.02 (cap)
        assert!(dist(&["0.25", "0.25", "0.25", "0.23"]).sum_ok());
        assert!(dist(&["0.26", "0.26", "0.25", "0.25"]).sum_ok());
        assert!(!dist(&["0.25", "0.25", "0.25", "0.22"]).sum_ok());
        assert!(!dist(&["0.27", "0.26", "0.25", "0.25"]).sum_ok());
    }

    #[test]
    fn r_val_sum_full_precision_keeps_the_thousandth() {
        assert!(dist(&["0.3335", "0.3335", "0.333"]).sum_ok()); // 1.000
        assert!(dist(&["0.4005", "0.6005"]).sum_ok()); // 1.001 exactly at the edge
        assert!(dist(&["0.3995", "0.5995"]).sum_ok()); // 0.999 exactly at the edge
        assert!(!dist(&["0.4006", "0.6005"]).sum_ok()); // 1.0011
        assert!(!dist(&["0.3994", "0.5995"]).sum_ok()); // 0.9989
                                                        // one full-precision value switches the whole distribution to 0.001
        assert!(!dist(&["0.50", "0.495"]).sum_ok());
        assert!(dist(&["0.50", "0.4995"]).sum_ok());
    }

    #[test]
    fn r_val_score_same_tolerance_as_sum() {
        // levels 0.2, 0.3, 0.5 → Σ i·p = 1.3
        let d = dist(&["0.20", "0.30", "0.50"]);
        assert!(d.score_ok(1.3, true));
        assert!(d.score_ok(1.31, true));
        assert!(d.score_ok(1.29, true));
        assert!(!d.score_ok(1.32, true));
        assert!(d.score_ok(1.3149, false));
        assert!(!d.score_ok(1.3151, false));
        let f = dist(&["0.2", "0.3", "0.5001"]);
        assert!(!f.hundredths);
        assert!(f.score_ok(1.3012, false));
        assert!(!f.score_ok(1.3013, false));
        assert!(!d.score_ok(f64::INFINITY, false));
    }
}
