//! `wb-lsp init`.

use anyhow::Context;
use wb_manifest::ModelCatalog;
use wb_manifest::init::{InitError, InitOptions, scaffold};

use crate::cli::InitArgs;
use crate::exit::Exit;

pub fn run(args: &InitArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let cwd = super::current_dir()?;
    let options = InitOptions {
        name: args.name.clone(),
        runner: args.runner.clone(),
        model: args.model.clone(),
        runtimes: args.runtimes.clone(),
        image: args.image.clone(),
    };
    let files = match scaffold(&options, catalog) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("error: {error}");
            if let InitError::UnknownModel(model) = &error {
                eprintln!("{}", unknown_model_help(catalog, model));
            }
            return Ok(Exit::Failure);
        }
    };
    let root = wb_manifest::absolute(args.dir.as_deref().unwrap_or(&cwd), &cwd);
    let package = root.join(".workbenches").join(args.name.trim());
    if package.exists() {
        eprintln!("error: Workbench already exists: {}", package.display());
        return Ok(Exit::Failure);
    }
    std::fs::create_dir_all(package.parent().context("package path has no parent")?)
        .with_context(|| format!("cannot create {}", root.display()))?;
    // Build the package in a temporary sibling and rename it into place, so a failure leaves nothing behind.
    let staging = package.with_file_name(format!(".{}.wb-lsp-init-{}", args.name.trim(), std::process::id()));
    let result = (|| -> std::io::Result<()> {
        std::fs::create_dir(&staging)?;
        std::fs::write(staging.join("workbench.yml"), &files.manifest)?;
        std::fs::write(staging.join("instructions.md"), &files.instructions)?;
        std::fs::rename(&staging, &package)
    })();
    if let Err(error) = result {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error).with_context(|| format!("cannot create {}", package.display()));
    }
    let shown = |path: &std::path::Path| crate::output::relative(path, &cwd);
    println!("Created {}", shown(&package.join("workbench.yml")));
    println!("Created {}", shown(&package.join("instructions.md")));
    println!(
        "Next: describe the work in {}, then run `wb-lsp check {}` and `wb-lsp smoke {}`",
        shown(&package.join("instructions.md")),
        shown(&package),
        shown(&package)
    );
    Ok(Exit::Success)
}

/// What to try instead of a model the catalog does not hold.
fn unknown_model_help(catalog: &ModelCatalog, model: &str) -> String {
    let ids: Vec<String> = catalog.suggested_models(model).iter().map(|id| format!("`{id}`")).collect();
    match ids.as_slice() {
        [] => "help: `wb-lsp models` lists the model catalog".to_owned(),
        [only] => format!("help: did you mean {only}? (`wb-lsp models` lists the model catalog)"),
        _ => format!("help: did you mean one of {}? (`wb-lsp models` lists the model catalog)", ids.join(", ")),
    }
}
