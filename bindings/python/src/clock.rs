//! `jevgate.ManualClock`: a clock that moves only when told, for tests and simulations.

use jevgate::clock::{Clock, ManualClock};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::time::{Duration, UNIX_EPOCH};

#[pyclass(module = "jevgate", name = "ManualClock", frozen)]
pub struct PyManualClock {
    pub clock: ManualClock,
}

fn duration(seconds: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| PyValueError::new_err("seconds must be a finite, nonnegative number"))
}

#[pymethods]
impl PyManualClock {
    #[new]
    fn new() -> Self {
        PyManualClock {
            clock: ManualClock::new(),
        }
    }

    /// Moves monotonic and wall time forward by `seconds`.
    fn advance(&self, seconds: f64) -> PyResult<()> {
        self.clock.advance(duration(seconds)?);
        Ok(())
    }

    /// Sets the wall time (Unix seconds) without moving monotonic time (suspend, NTP jump).
    fn set_wall(&self, unix_seconds: f64) -> PyResult<()> {
        self.clock.set_wall(UNIX_EPOCH + duration(unix_seconds)?);
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
