//! Registers the built-in roles: every module of `src/` whose folder exports a
//! `DESCRIPTOR` (`pub const DESCRIPTOR: RoleDescriptor` in its `mod.rs`) is listed, by
//! folder name, in `$OUT_DIR/built_in.rs`, which `src/lib.rs` includes as `BUILT_IN`.
//! A new role is its folder and its `pub mod` line in `src/lib.rs`; nothing else lists
//! it.

use std::{env, fs, path::Path};

fn main() {
    let src = Path::new("src");
    println!("cargo:rerun-if-changed=src");
    let mut roles: Vec<String> = Vec::new();
    let entries = fs::read_dir(src).expect("agents/src is readable");
    for entry in entries {
        let entry = entry.expect("agents/src is readable");
        let module = entry.path().join("mod.rs");
        let Ok(text) = fs::read_to_string(&module) else {
            continue;
        };
        println!("cargo:rerun-if-changed={}", module.display());
        if text.contains("pub const DESCRIPTOR") {
            roles.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    roles.sort();
    let mut out = String::from(
        "/// The built-in roles, by module name: every module whose folder exports a\n\
         /// `DESCRIPTOR` (listed by `build.rs`).\n\
         const BUILT_IN: &[&runtime::RoleDescriptor] = &[\n",
    );
    for role in &roles {
        out.push_str(&format!("    &{role}::DESCRIPTOR,\n"));
    }
    out.push_str("];\n");
    let path = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("built_in.rs");
    fs::write(path, out).expect("OUT_DIR is writable");
}
