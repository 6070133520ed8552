//! The remote runtimes (E2B, Daytona): a disposable sandbox per run from a service. Everything but the
//! transport is shared here; `provider` is the interface each service implements.

pub mod provider;
