//! Skills: project rules in `.agents/skills/<name>/SKILL.md`, listed by name and description
//! in the system prompt and loaded on demand with the `load_skill` tool.

pub mod parse;
