//! `skill {name}`: a skill's procedure and the list of its files.

use super::{Skills, SKILL_TOOL};
use crate::{parse_args, Tool, ToolContext, ToolInput, ToolResult};
use cogni_protocol::{ToolFormat, ToolSpec};
use futures::future::BoxFuture;
use serde::Deserialize;
use std::sync::Arc;

/// Loads a skill for the model (offered when skills are on and there is
/// at least one).
pub struct SkillTool {
    skills: Arc<Skills>,
}

impl SkillTool {
    /// The tool, loading from `skills`.
    pub fn new(skills: Arc<Skills>) -> Self {
        SkillTool { skills }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    name: String,
}

impl Tool for SkillTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SKILL_TOOL.into(),
            description: "Load a skill by name: its step-by-step procedure and the list of \
                          the files in its folder (read them with read_file when the procedure \
                          needs them). The system prompt's skills section says what each skill \
                          is for; load one before you start a task it fits, then follow it."
                .into(),
            format: ToolFormat::Function {
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "the skill's name"}},
                    "required": ["name"],
                    "additionalProperties": false
                }),
            },
            read_only: true,
        }
    }

    fn run<'a>(&'a self, input: ToolInput, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = match parse_args(SKILL_TOOL, input) {
                Ok(args) => args,
                Err(result) => return result,
            };
            let name = args.name.trim().trim_start_matches('$');
            match self.skills.get(name) {
                Some(skill) => ToolResult::ok(skill.render(&ctx.cwd)),
                None => ToolResult::error(format!(
                    "there is no skill `{name}`; the skills are: {}",
                    self.skills
                        .all()
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{Root, Scope};
    use crate::ToolConfig;

    #[tokio::test]
    async fn loads_a_skill_by_name_and_names_the_others_when_asked_for_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("skills");
        for name in ["lint", "pdf"] {
            std::fs::create_dir_all(root.join(name)).unwrap();
            std::fs::write(
                root.join(name).join("SKILL.md"),
                format!("---\nname: {name}\ndescription: d\n---\nDo {name}.\n"),
            )
            .unwrap();
        }
        let skills = Skills::load(
            vec![Root {
                dir: root,
                scope: Scope::User,
            }],
            |_| true,
            1000,
        );
        let tool = SkillTool::new(Arc::new(skills));
        let ctx = ToolContext::new(
            dir.path().to_path_buf(),
            Default::default(),
            Arc::new(ToolConfig::default()),
        );
        let input = |name: &str| ToolInput::Json(serde_json::json!({ "name": name }));
        let out = tool.run(input("pdf"), &ctx).await;
        assert!(!out.is_error);
        assert!(out.content.contains("Do pdf."), "{}", out.content);
        let out = tool.run(input("$lint"), &ctx).await;
        assert!(out.content.contains("Do lint."), "{}", out.content);
        let out = tool.run(input("nope"), &ctx).await;
        assert!(out.is_error);
        assert_eq!(
            out.content,
            "there is no skill `nope`; the skills are: lint, pdf"
        );
        assert!(tool.spec().read_only);
    }
}
