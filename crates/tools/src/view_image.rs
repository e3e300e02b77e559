//! `view_image`: an image file of the workspace, for the model to look at.
//! Only the workspace (cwd and the writable roots): a path that resolves
//! outside it, through `..` or a symlink, is refused (any path under
//! danger-full-access).

use super::{parse_args, paths, Tool, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use serde::Deserialize;

/// The `view_image` tool: the image at a path, as an image the model sees
/// (offered to models that take images).
pub struct ViewImageTool;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
}

impl Tool for ViewImageTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "view_image".into(),
            description: format!(
                "Look at an image file (PNG, JPEG, GIF or WebP): a screenshot, a diagram, a \
                 rendered page. Larger than {edge} pixels on a side, it is scaled down.",
                edge = crate::image::MAX_EDGE
            ),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": false
                }),
            },
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match parse_args("view_image", input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            let shown = paths::display(&ctx.cwd, &paths::resolve(&ctx.cwd, &args.path));
            let target = match paths::workspace_file(ctx, &args.path).await {
                Ok(target) => target,
                Err(e) => return ToolResult::error(format!("cannot view `{shown}`: {e}")),
            };
            let name = shown.clone();
            let loaded =
                tokio::task::spawn_blocking(move || crate::image::from_target(&target, &name))
                    .await;
            match loaded {
                Ok(Ok(prepared)) => ToolResult {
                    images: vec![prepared.image.clone()],
                    ..ToolResult::ok(format!("the image is attached: {}", prepared.summary()))
                },
                Ok(Err(e)) => ToolResult::error(format!("cannot view `{shown}`: {e}")),
                Err(_) => ToolResult::error(format!("reading `{shown}` was interrupted")),
            }
        })
    }
}
