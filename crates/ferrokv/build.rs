//! Compiles the small C shim in `csrc/` (long double arithmetic for
//! INCRBYFLOAT, see csrc/longdouble.c for why it is C).

fn main() {
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new()
        .file("csrc/longdouble.c")
        .warnings(true)
        .compile("ferrokv_longdouble");
}
