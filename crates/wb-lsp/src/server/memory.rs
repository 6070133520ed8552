//! Gives the system back the memory the allocator keeps after the server freed it. glibc's allocator gives each
//! thread an arena of its own and returns freed memory only from the top of a heap, so after a burst of checks
//! on the workers the session's peak stays resident; `malloc_trim(0)` returns every arena's free pages. The
//! only `unsafe` of the workspace (the tidy test holds it to this file).

/// Returns the allocator's free pages to the system, when the allocator is glibc's; elsewhere (musl, macOS)
/// nothing: those allocators return memory themselves or have no such call.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn release() {
    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: `malloc_trim` takes no pointer and has no precondition; glibc locks each arena while it trims it.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release() {}
