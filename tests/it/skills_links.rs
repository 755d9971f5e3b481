//! End-to-end tests of what a repository's skills may make readable: a project's skills roots,
//! skill folders, SKILL.md files and resources must not lead outside the project, while the
//! user's own roots may be links. Each test asserts on what hx sends in the next request.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::support::calls::load_skill;
use crate::support::{system_prompt, tool_results, Call, FakeServer, Hx, Reply, Run};
use serde_json::{json, Value};

const SECRET: &str = "TOP SECRET: do not leak\n";

/// A folder beside the workspace and the home folder: outside the project and the user's roots.
fn outside(hx: &Hx) -> PathBuf {
    let dir = hx
        .workspace()
        .parent()
        .expect("the workspace has a parent")
        .join("outside");
    std::fs::create_dir_all(&dir).expect("outside folder");
    dir.canonicalize().expect("canonical outside")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("folders");
    std::fs::write(path, text).expect("write");
}

fn skill_text(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n")
}

fn read(id: &str, path: &Path) -> Call {
    let path = path.to_str().expect("utf8 path");
    Call::new(id, "read_file", &json!({ "path": path }).to_string())
}

fn escape(path: &Path) -> String {
    format!("Error: path escapes workspace: {}", path.display())
}

/// Runs `hx agent` with the given first turn of calls, then a plain answer.
fn run_agent(hx: &mut Hx, calls: Vec<Call>) -> (FakeServer, Run) {
    let server = FakeServer::start(vec![Reply::tool_calls(calls), Reply::text("done")]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .clear_args()
        .args(["agent", "use the skills"]);
    let run = hx.run();
    run.assert_code(0);
    (server, run)
}

fn assert_warned(run: &Run, line: &str) {
    assert!(
        run.stderr.contains(&format!("hx: warning: {line}\n")),
        "missing warning {line:?} in\n{}",
        run.stderr
    );
}

#[test]
fn a_project_skills_root_linked_out_of_the_project_is_skipped() {
    let mut hx = Hx::new_offline();
    let out = outside(&hx);
    write(
        &out.join("skills/leak/SKILL.md"),
        &skill_text("leak", "Leaked skill"),
    );
    write(&out.join("skills/leak/secret.txt"), SECRET);
    write(&out.join("skills/secret.txt"), SECRET);
    hx.write_file(
        ".agents/skills/ok/SKILL.md",
        &skill_text("ok", "Fine skill"),
    );
    let ws = hx.workspace().canonicalize().expect("canonical workspace");
    std::fs::create_dir_all(ws.join(".claude")).expect(".claude");
    symlink(out.join("skills"), ws.join(".claude/skills")).expect("symlink");

    let (server, run) = run_agent(
        &mut hx,
        vec![
            read("r1", &out.join("skills/leak/secret.txt")),
            read("r2", &out.join("skills/secret.txt")),
            load_skill("l1", "leak"),
        ],
    );
    assert_warned(
        &run,
        &format!(
            "skipping skills root {}: it links to {}, outside the project {}",
            ws.join(".claude/skills").display(),
            out.join("skills").display(),
            ws.display()
        ),
    );
    let system = system_prompt(&server.requests()[0].body);
    assert!(system.contains("- ok: Fine skill"), "{system}");
    assert!(!system.contains("leak"), "{system}");
    let results = tool_results(&server.requests()[1].body);
    assert_eq!(results[0], escape(&out.join("skills/leak/secret.txt")));
    assert_eq!(results[1], escape(&out.join("skills/secret.txt")));
    assert_eq!(results[2], "Error: unknown skill leak. Available: ok");

    // `hx skills check` names the skipped root as an error.
    let check = hx
        .env_remove("DEEPSEEK_API_KEY")
        .clear_args()
        .args(["skills", "check"])
        .run();
    check.assert_code(1);
    assert_eq!(
        check.stdout,
        format!(
            ".claude/skills: error: links to {}, outside the project {}: hx skips this skills root\n",
            out.join("skills").display(),
            ws.display()
        )
    );
}

#[test]
fn a_project_skills_root_linked_to_the_home_folder_is_skipped() {
    let mut hx = Hx::new_offline();
    let home = hx.home().canonicalize().expect("canonical home");
    write(
        &home.join("notes/SKILL.md"),
        &skill_text("notes", "Home notes"),
    );
    write(&home.join(".secret"), SECRET);
    let ws = hx.workspace().canonicalize().expect("canonical workspace");
    std::fs::create_dir_all(ws.join(".agents")).expect(".agents");
    symlink(&home, ws.join(".agents/skills")).expect("symlink");

    let (server, run) = run_agent(&mut hx, vec![read("r1", &home.join(".secret"))]);
    assert!(
        run.stderr.contains("skipping skills root"),
        "{}",
        run.stderr
    );
    let system = system_prompt(&server.requests()[0].body);
    assert!(system.ends_with("No skills are available."), "{system}");
    assert_eq!(
        tool_results(&server.requests()[1].body),
        [escape(&home.join(".secret"))]
    );
}

#[test]
fn a_skill_folder_linked_out_of_its_root_is_skipped() {
    let mut hx = Hx::new_offline();
    let out = outside(&hx);
    write(
        &out.join("leak/SKILL.md"),
        &skill_text("leak", "Leaked skill"),
    );
    write(&out.join("leak/secret.txt"), SECRET);
    hx.write_file(
        ".agents/skills/ok/SKILL.md",
        &skill_text("ok", "Fine skill"),
    );
    let ws = hx.workspace().canonicalize().expect("canonical workspace");
    symlink(out.join("leak"), ws.join(".agents/skills/leak")).expect("symlink");

    let (server, run) = run_agent(
        &mut hx,
        vec![
            read("r1", &out.join("leak/secret.txt")),
            read("r2", Path::new(".agents/skills/leak/secret.txt")),
            load_skill("l1", "leak"),
        ],
    );
    assert_warned(
        &run,
        &format!(
            "skipping {}: it links to {}, outside its skills root {}",
            ws.join(".agents/skills/leak").display(),
            out.join("leak").display(),
            ws.join(".agents/skills").display()
        ),
    );
    let system = system_prompt(&server.requests()[0].body);
    assert!(system.contains("- ok: Fine skill"), "{system}");
    assert!(!system.contains("leak"), "{system}");
    let results = tool_results(&server.requests()[1].body);
    assert_eq!(results[0], escape(&out.join("leak/secret.txt")));
    assert_eq!(
        results[1],
        "Error: path escapes workspace: .agents/skills/leak/secret.txt"
    );
    assert_eq!(results[2], "Error: unknown skill leak. Available: ok");
}

#[test]
fn a_skill_file_linked_out_of_its_root_is_skipped() {
    let mut hx = Hx::new_offline();
    let out = outside(&hx);
    // Any Markdown file with frontmatter would do: its description would reach the model.
    write(
        &out.join("diary.md"),
        &skill_text("leak", "PRIVATE DIARY ENTRY"),
    );
    hx.write_file(
        ".agents/skills/ok/SKILL.md",
        &skill_text("ok", "Fine skill"),
    );
    let ws = hx.workspace().canonicalize().expect("canonical workspace");
    std::fs::create_dir_all(ws.join(".agents/skills/leak")).expect("skill folder");
    symlink(
        out.join("diary.md"),
        ws.join(".agents/skills/leak/SKILL.md"),
    )
    .expect("symlink");

    let (server, run) = run_agent(
        &mut hx,
        vec![read("r1", &out.join("diary.md")), load_skill("l1", "leak")],
    );
    assert_warned(
        &run,
        &format!(
            "skipping {}: it links to {}, outside its skills root {}",
            ws.join(".agents/skills/leak/SKILL.md").display(),
            out.join("diary.md").display(),
            ws.join(".agents/skills").display()
        ),
    );
    let system = system_prompt(&server.requests()[0].body);
    assert!(!system.contains("PRIVATE DIARY"), "{system}");
    assert!(!system.contains("leak"), "{system}");
    let results = tool_results(&server.requests()[1].body);
    assert_eq!(results[0], escape(&out.join("diary.md")));
    assert_eq!(results[1], "Error: unknown skill leak. Available: ok");
}

#[test]
fn skills_check_reports_every_link_out_of_a_project_root() {
    let mut hx = Hx::new_offline();
    let out = outside(&hx);
    write(&out.join("leak/SKILL.md"), &skill_text("leak", "Leaked"));
    write(&out.join("diary.md"), &skill_text("diary", "Diary"));
    hx.write_file(".agents/skills/ok/SKILL.md", &skill_text("ok", "Fine"));
    let ws = hx.workspace().canonicalize().expect("canonical workspace");
    symlink(out.join("leak"), ws.join(".agents/skills/leak")).expect("symlink");
    std::fs::create_dir_all(ws.join(".agents/skills/diary")).expect("skill folder");
    symlink(
        out.join("diary.md"),
        ws.join(".agents/skills/diary/SKILL.md"),
    )
    .expect("symlink");
    hx.env_remove("DEEPSEEK_API_KEY");

    let root = ws.join(".agents/skills");
    let expected = format!(
        ".agents/skills/diary/SKILL.md: error: links to {}, outside its skills root {root}: hx skips it\n\
         .agents/skills/leak: error: links to {}, outside its skills root {root}: hx skips it\n",
        out.join("diary.md").display(),
        out.join("leak").display(),
        root = root.display(),
    );
    let check = hx.args(["skills", "check"]).run();
    check.assert_code(1);
    assert_eq!(check.stdout, expected);
    // Naming the root gives the same verdict as discovery.
    let check = hx
        .clear_args()
        .args(["skills", "check", ".agents/skills"])
        .run();
    check.assert_code(1);
    assert_eq!(check.stdout, expected);
    let check = hx
        .clear_args()
        .args(["skills", "check", ".agents/skills/leak"])
        .run();
    check.assert_code(1);
    assert_eq!(
        check.stdout,
        format!(
            ".agents/skills/leak: error: links to {}, outside its skills root {}: hx skips it\n",
            out.join("leak").display(),
            root.display()
        )
    );
    // `hx skills list` shows only the skill that stays inside.
    let list = hx.clear_args().args(["skills", "list", "--json"]).run();
    list.assert_code(0);
    let rows: Value = serde_json::from_str(&list.stdout).expect("JSON");
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
    assert_eq!(rows[0]["name"], "ok");
}

#[test]
fn linked_resources_out_of_a_skill_are_neither_listed_nor_readable() {
    let mut hx = Hx::new_offline();
    let out = outside(&hx);
    write(&out.join("secret.txt"), SECRET);
    write(&out.join("private/keys.txt"), SECRET);
    hx.write_file(
        ".agents/skills/deploy/SKILL.md",
        &skill_text("deploy", "Deploy"),
    )
    .write_file(".agents/skills/deploy/guide.md", "# Guide\n");
    let ws = hx.workspace().canonicalize().expect("canonical workspace");
    let dir = ws.join(".agents/skills/deploy");
    symlink(out.join("secret.txt"), dir.join("notes.txt")).expect("file link");
    symlink(out.join("private"), dir.join("refs")).expect("folder link");
    symlink("guide.md", dir.join("alias.md")).expect("link inside");

    let (server, _run) = run_agent(
        &mut hx,
        vec![
            load_skill("l1", "deploy"),
            read("r1", Path::new(".agents/skills/deploy/refs/keys.txt")),
            read("r2", Path::new(".agents/skills/deploy/notes.txt")),
        ],
    );
    let results = tool_results(&server.requests()[1].body);
    assert_eq!(
        results[0],
        "<skill name=\"deploy\">\nBody of deploy.\n\n\
         Other files in this skill (read them with read_file when the instructions call for them):\n\
         - .agents/skills/deploy/alias.md\n\
         - .agents/skills/deploy/guide.md\n</skill>"
    );
    assert_eq!(
        results[1],
        "Error: path escapes workspace: .agents/skills/deploy/refs/keys.txt"
    );
    assert_eq!(
        results[2],
        "Error: path escapes workspace: .agents/skills/deploy/notes.txt"
    );
}

#[test]
fn above_the_workspace_only_the_skill_folders_are_readable() {
    let mut hx = Hx::new_offline();
    hx.write_file(
        ".agents/skills/deploy/SKILL.md",
        &skill_text("deploy", "Deploy"),
    )
    .write_file(".agents/skills/deploy/guide.md", "# Guide\n")
    .write_file(".agents/skills/stray.txt", SECRET)
    .write_file("secret.txt", SECRET)
    .current_dir_rel("sub");
    let ws = hx.workspace().canonicalize().expect("canonical workspace");

    let (server, _run) = run_agent(
        &mut hx,
        vec![
            read("r1", &ws.join(".agents/skills/deploy/guide.md")),
            read("r2", &ws.join(".agents/skills/stray.txt")),
            read("r3", &ws.join("secret.txt")),
        ],
    );
    let results = tool_results(&server.requests()[1].body);
    assert_eq!(results[0], "# Guide\n");
    assert_eq!(results[1], escape(&ws.join(".agents/skills/stray.txt")));
    assert_eq!(results[2], escape(&ws.join("secret.txt")));
}

#[test]
fn the_users_own_roots_may_be_links() {
    let mut hx = Hx::new_offline();
    let home = hx.home().canonicalize().expect("canonical home");
    let out = outside(&hx);
    // ~/.claude/skills is a link to a dotfiles folder, and one skill in it a link further on.
    write(
        &home.join("dotfiles/skills/mine/SKILL.md"),
        &skill_text("mine", "Mine"),
    );
    write(
        &home.join("dotfiles/skills/mine/style.md"),
        "Short lines.\n",
    );
    write(
        &out.join("shared/SKILL.md"),
        &skill_text("shared", "Shared"),
    );
    write(&out.join("shared/ref.md"), "Shared ref.\n");
    symlink(out.join("shared"), home.join("dotfiles/skills/shared")).expect("symlink");
    std::fs::create_dir_all(home.join(".claude")).expect(".claude");
    symlink(home.join("dotfiles/skills"), home.join(".claude/skills")).expect("symlink");

    let (server, run) = run_agent(
        &mut hx,
        vec![
            read("r1", &home.join("dotfiles/skills/mine/style.md")),
            read("r2", &out.join("shared/ref.md")),
        ],
    );
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    let system = system_prompt(&server.requests()[0].body);
    assert!(
        system.contains("- mine: Mine\n- shared: Shared"),
        "{system}"
    );
    assert_eq!(
        tool_results(&server.requests()[1].body),
        ["Short lines.\n", "Shared ref.\n"]
    );
}
