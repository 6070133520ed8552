//! `wb-lsp models`: the model catalog (id, name and the providers serving each model), for people and scripts.

use std::io::Write;

use serde_json::json;
use wb_manifest::ModelCatalog;

use super::printable;
use crate::cli::ModelsArgs;
use crate::exit::Exit;

/// One catalog model as listed: its providers with their native ids, the lab's own provider first.
struct Listed<'c> {
    id: &'c str,
    name: &'c str,
    routes: Vec<(&'c str, &'c str)>,
}

pub fn run(args: &ModelsArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let query = args.filter.as_deref().map(str::to_lowercase);
    let models: Vec<Listed<'_>> = catalog
        .models
        .iter()
        .filter(|(id, model)| {
            query.as_deref().is_none_or(|q| id.to_lowercase().contains(q) || model.name.to_lowercase().contains(q))
        })
        .map(|(id, model)| Listed { id, name: &model.name, routes: catalog.default_routes(id) })
        .collect();
    let text = if args.json {
        let models: Vec<_> = models
            .iter()
            .map(|model| {
                let providers: Vec<_> = model
                    .routes
                    .iter()
                    .map(|(provider, native)| json!({"provider": provider, "model": native}))
                    .collect();
                json!({"id": model.id, "name": model.name, "providers": providers})
            })
            .collect();
        format!("{}\n", json!({"catalog": catalog.version, "models": models}))
    } else {
        human(&models)
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(Exit::Success)
}

/// Aligned columns under a header; a catalog file's texts are made printable first.
fn human(models: &[Listed<'_>]) -> String {
    if models.is_empty() {
        return "No models match.\n".to_owned();
    }
    let header = ["ID".to_owned(), "NAME".to_owned(), "PROVIDERS".to_owned()];
    let rows: Vec<[String; 3]> = models
        .iter()
        .map(|model| {
            let providers: Vec<&str> = model.routes.iter().map(|(provider, _)| *provider).collect();
            [
                printable(model.id).into_owned(),
                printable(model.name).into_owned(),
                printable(&providers.join(", ")).into_owned(),
            ]
        })
        .collect();
    let width =
        |column: usize| rows.iter().chain([&header]).map(|row| row[column].chars().count()).max().unwrap_or_default();
    let (id_width, name_width) = (width(0), width(1));
    let mut out = String::new();
    for row in [&header].into_iter().chain(&rows) {
        out.push_str(&format!("{:id_width$}  {:name_width$}  {}\n", row[0], row[1], row[2]));
    }
    out
}
