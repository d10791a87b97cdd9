//! `gateway.leases`: device control leases (R-LEASE) with dicts out.

use crate::errors::IntoPy;
use jevgate::lease::{ControlCaller, Credential};
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pyclass(module = "jevgate", name = "Leases", frozen)]
pub struct PyLeases {
    pub gateway: jevgate::Gateway,
}

fn grant_dict<'py>(py: Python<'py>, g: jevgate::lease::LeaseGrant) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("acquired", g.acquired)?;
    d.set_item("expiresAt", g.expires_at)?;
    Ok(d)
}

fn caller(principal: String, delegated: bool, root_session: Option<String>) -> ControlCaller {
    ControlCaller {
        principal,
        credential: if delegated {
            Credential::Delegated
        } else {
            Credential::Owner
        },
        root_session,
    }
}

type GrantCall =
    fn(&jevgate::lease::Leases, &str, &str) -> jevgate::Result<jevgate::lease::LeaseGrant>;

impl PyLeases {
    fn grant<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        session: &str,
        call: GrantCall,
    ) -> PyResult<Bound<'py, PyDict>> {
        let gw = &self.gateway;
        let g = py.detach(|| call(gw.leases(), device, session)).py_err()?;
        grant_dict(py, g)
    }
}

#[pymethods]
impl PyLeases {
    /// A browser call: acquire a free lease or renew your own. Returns
    /// {"acquired": bool, "expiresAt": unix_ms}. Raises LeaseError DEVICE_CONTROL_ELSEWHERE, or
    /// DEVICE_CONTROL_REVOKED exactly once after the owner took the device back.
    fn acquire<'py>(
        &self,
        py: Python<'py>,
        device_id: String,
        root_session: String,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.grant(
            py,
            &device_id,
            &root_session,
            jevgate::lease::Leases::acquire,
        )
    }

    /// Renew only (LeaseError DEVICE_CONTROL_NOT_HELD when the session holds nothing).
    fn renew<'py>(
        &self,
        py: Python<'py>,
        device_id: String,
        root_session: String,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.grant(py, &device_id, &root_session, jevgate::lease::Leases::renew)
    }

    /// The owner takes the device back; returns whether a holder was dispossessed.
    #[pyo3(signature = (device_id, principal, *, delegated = false))]
    fn take_back(
        &self,
        py: Python<'_>,
        device_id: String,
        principal: String,
        delegated: bool,
    ) -> PyResult<bool> {
        let gw = &self.gateway;
        py.detach(|| {
            gw.leases()
                .take_back(&device_id, &caller(principal, delegated, None))
        })
        .py_err()
    }

    /// {"held", "heldByRootSession", "expiresAt", "revoked"} for the device's owner.
    #[pyo3(signature = (device_id, principal, *, root_session = None, delegated = false))]
    fn status<'py>(
        &self,
        py: Python<'py>,
        device_id: String,
        principal: String,
        root_session: Option<String>,
        delegated: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let gw = &self.gateway;
        let s = py
            .detach(|| {
                gw.leases()
                    .status(&device_id, &caller(principal, delegated, root_session))
            })
            .py_err()?;
        let d = PyDict::new(py);
        d.set_item("held", s.held)?;
        d.set_item("heldByRootSession", s.held_by_root_session)?;
        d.set_item("expiresAt", s.expires_at)?;
        d.set_item("revoked", s.revoked)?;
        Ok(d)
    }

    /// Session end / Chat Stop: releases the session's leases without cancelling; returns the
    /// number of devices released.
    fn release_session(&self, py: Python<'_>, root_session: String) -> PyResult<usize> {
        let gw = &self.gateway;
        py.detach(|| gw.leases().release_session(&root_session))
            .py_err()
    }

    /// Records the device's owner (control routes then accept only that principal).
    fn set_device_owner(&self, device_id: String, owner: String) -> PyResult<()> {
        self.gateway
            .leases()
            .set_device_owner(&device_id, &owner)
            .py_err()
    }

    /// Reaps idle browser sessions now (the gateway also does so every second); returns how
    /// many were closed.
    fn reap(&self, py: Python<'_>) -> usize {
        let gw = &self.gateway;
        py.detach(|| gw.leases().reap())
    }
}
