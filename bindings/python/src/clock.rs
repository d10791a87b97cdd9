//! `jevgate.ManualClock`: a clock that moves only when told, for tests and simulations.

use jevgate::clock::{Clock, ManualClock};
use pyo3::prelude::*;
use std::time::Duration;

#[pyclass(module = "jevgate", name = "ManualClock", frozen)]
pub struct PyManualClock {
    pub clock: ManualClock,
}

/// A host-supplied number of seconds: NaN, infinite or negative is `INVALID_ARGUMENT`
/// (`jevgate.ArgumentError`, a `ValueError`); a finite value too large for a duration
/// saturates (the clock saturates too, never panics).
fn duration(seconds: f64) -> PyResult<Duration> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(crate::errors::invalid_argument(
            "seconds",
            "must be a finite, nonnegative number",
        ));
    }
    Ok(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

#[pymethods]
impl PyManualClock {
    #[new]
    fn new() -> Self {
        PyManualClock {
            clock: ManualClock::new(),
        }
    }

    /// Moves monotonic and wall time forward by `seconds` (saturating: wall time stops at
    /// 9999-12-31T23:59:59.999Z).
    fn advance(&self, seconds: f64) -> PyResult<()> {
        self.clock.advance(duration(seconds)?);
        Ok(())
    }

    /// Sets the wall time (Unix seconds) without moving monotonic time (suspend, NTP jump);
    /// later than 9999-12-31T23:59:59.999Z saturates to it.
    fn set_wall(&self, unix_seconds: f64) -> PyResult<()> {
        self.clock.set_wall_since_epoch(duration(unix_seconds)?);
        Ok(())
    }

    /// Monotonic seconds since the clock was created.
    #[getter]
    fn now(&self) -> f64 {
        self.clock.now().since_origin().as_secs_f64()
    }

    /// Wall time in Unix milliseconds.
    #[getter]
    fn wall_ms(&self) -> i64 {
        self.clock.wall_millis()
    }

    fn __repr__(&self) -> String {
        format!("<jevgate.ManualClock now={:.3}s>", self.now())
    }
}
