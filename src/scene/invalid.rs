//! A scene value out of its range ([`InvalidValue`]) and how values are written in its messages
//! ([`tuple`]): what the checks of the scene (`validate.rs`), its obstacles and its bodies share, in a
//! module of its own so that they import it and not each other.

use crate::sim::params::fmt_f32;
use thiserror::Error;

/// A value of a scene out of its range: the item it belongs to ("emitter 1", "domain"), the field, the
/// value as written and what was expected. Printed as ``emitter 1: `rate` = inf must be finite``.
#[derive(Clone, Debug, Error, PartialEq)]
#[error("{item}: `{field}` = {value} {problem}")]
pub struct InvalidValue {
    /// "domain", "fluid block 2", "emitter 1", "sink 3", "terrain", "camera", "emitters", ...
    pub item: String,
    /// The field's name in the scene file ("center", "radius", "velocity", ...).
    pub field: &'static str,
    /// The value: a number, or a vector written as a RON tuple ("(1, NaN, 0.5)").
    pub value: String,
    /// What is wrong, with the range expected ("must be > 0 m").
    pub problem: String,
}

impl InvalidValue {
    pub(super) fn new(
        item: impl Into<String>,
        field: &'static str,
        value: impl ToString,
        problem: impl Into<String>,
    ) -> Self {
        Self { item: item.into(), field, value: value.to_string(), problem: problem.into() }
    }
}

/// A vector as a RON tuple with each f32 in its shortest round-trip form ([`fmt_f32`]): `(1, 0.025, NaN)`.
pub fn tuple(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(|&x| fmt_f32(x)).collect();
    format!("({})", parts.join(", "))
}
