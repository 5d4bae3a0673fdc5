//! The README's example, built the way a user builds it: in a crate of its own whose
//! `[dependencies]` are the lines of the README's "Use it in your crate" section (with
//! `graphwright` pointed at this checkout) and whose `src/main.rs` is the README's example. Both
//! are read from README.md, so the README cannot drift from what builds. The crate must build
//! with no warning, clippy's pedantic lints included.
//!
//! The crate lives in `target/readme-crate/` and shares the workspace's target directory and
//! lock file, so the dependencies the workspace already compiled are not compiled again.

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn the_readme_example_builds_without_warnings_in_a_crate_of_its_own() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("runtime/ is inside the workspace").to_owned();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md is readable");
    let dependencies = code_block(&readme, "## Use it in your crate", "toml");
    let example = code_block(&readme, "## Example", "rust");
    assert!(
        dependencies.starts_with("[dependencies]\n"),
        "the section shows a `[dependencies]` table:\n{dependencies}"
    );

    let dir = root.join("target").join("readme-crate");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), manifest(&dependencies, &root.join("runtime"))).unwrap();
    std::fs::write(dir.join("src").join("main.rs"), example).unwrap();
    // The workspace's versions of every dependency: nothing is resolved anew or downloaded.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(&dir)
        .args(["clippy", "--offline", "--quiet", "--target-dir"])
        .arg(target_dir(&root))
        .args(["--", "-D", "warnings", "-W", "clippy::pedantic"])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "the README's example does not build cleanly in a crate of its own ({}):\n{}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The manifest of the example's crate: the README's `[dependencies]`, with the `graphwright`
/// line replaced by a path to this checkout. An empty `[workspace]` keeps the crate out of the
/// workspace whose directory holds it.
fn manifest(dependencies: &str, runtime: &Path) -> String {
    let mut replaced = 0;
    let lines: Vec<String> = dependencies
        .lines()
        .map(|line| {
            if line.starts_with("graphwright ") || line.starts_with("graphwright=") {
                replaced += 1;
                format!("graphwright = {{ path = {:?} }}", runtime.display().to_string())
            } else {
                line.to_owned()
            }
        })
        .collect();
    assert_eq!(replaced, 1, "the README's dependencies name `graphwright` once:\n{dependencies}");
    format!(
        "[package]\nname = \"readme-example\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [workspace]\n\n{}\n",
        lines.join("\n")
    )
}

/// The workspace's target directory (honouring `CARGO_TARGET_DIR`).
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// The first code block of language `lang` after the heading `heading`, without its fences.
fn code_block(readme: &str, heading: &str, lang: &str) -> String {
    let after =
        readme.split_once(&format!("\n{heading}\n")).unwrap_or_else(|| panic!("README.md has a `{heading}` section")).1;
    let section = after.split_once("\n## ").map_or(after, |(section, _)| section);
    let fence = format!("```{lang}\n");
    let start = section.find(&fence).unwrap_or_else(|| panic!("`{heading}` has a ```{lang} block")) + fence.len();
    let end = section[start..].find("```\n").expect("the block is closed") + start;
    section[start..end].to_owned()
}
