//! Tasks (issue 14, R-TSK): a person's commands carried out on a browser target.
mod device_target;
pub use device_target::DeviceTarget;
