//! What the engine's tests share: the options of a run of one package of a scratch `World`.

use std::collections::BTreeMap;

use wb_engine::{Context, Options, Request, Settings};
use wb_testsupport::World;

/// Options to run `source` (a package of `world.repo`) on `task`, with `world.work` as the primary workspace,
/// the Workbench home under `world.home`, and `inherited` as the process environment.
pub fn options(world: &World, source: impl Into<String>, task: &str, inherited: BTreeMap<String, String>) -> Options {
    Options {
        request: Request {
            settings: Settings {
                source: source.into(),
                cwd: world.repo.clone(),
                primary: Some(world.work.clone()),
                home: Some(world.home.join(".workbench")),
                ..Settings::default()
            },
            task: Some(task.to_owned()),
            ..Request::default()
        },
        context: Context { inherited, ..Context::default() },
    }
}
