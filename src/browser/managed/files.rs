//! The file tools (the `files` cap, with a workspace the host named): `browser_file_upload`
//! sets a file input from workspace files, `browser_download_files` lists the tab's downloads
//! and saves one into the workspace.
//!
//! It never lets a path leave the workspace (`crate::browser::confine` / `confine_upload`: no
//! `..`, no symlink out, never overwriting), never echoes a path in an error (the refusal names
//! the field), and never returns a file's contents. No workspace refuses both (`ACCESS_DENIED`).

use std::path::Path;

use serde_json::{json, Map, Value};

use super::args::{bad, confined_error, Args};
use super::{ManagedBrowser, ManagedRun};
use crate::browser::backend::{DownloadsArgs, SetInputFilesArgs};
use crate::untrusted::wrap_text;
use crate::{Error, Result};

/// The most files one `browser_file_upload` sets.
const MAX_UPLOAD: usize = 16;

impl ManagedBrowser {
    /// `browser_file_upload`: the files, each confined to the workspace, set on one file input.
    pub(super) fn file_upload(&self, a: &Args<'_>, run: &ManagedRun<'_>) -> Result<Value> {
        let (tool, obj) = (a.tool, a.obj);
        let workspace = workspace_of(tool, run)?;
        let t = a.target("target")?;
        let Some(Value::Array(items)) = obj.get("paths") else {
            return Err(bad(tool, "`paths` must be an array of strings"));
        };
        if items.len() > MAX_UPLOAD {
            return Err(bad(
                tool,
                format!("`paths` must have at most {MAX_UPLOAD} entries"),
            ));
        }
        let mut paths = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Value::String(p) = item else {
                return Err(bad(tool, format!("`paths[{i}]` must be a string")));
            };
            let confined = crate::browser::files::confine_upload(workspace, p)
                .map_err(|e| confined_error(tool, &format!("paths[{i}]"), e))?;
            paths.push(confined.to_string_lossy().into_owned());
        }
        let (generation, reference) = self.locate(&t)?;
        let action = self.backend.set_input_files(SetInputFilesArgs {
            operation_id: self.op(),
            generation,
            reference,
            paths,
        })?;
        let mut extra = Map::new();
        extra.insert("uploaded".into(), json!(items.len()));
        self.after_action(action, extra)
    }

    /// `browser_download_files`: the tab's downloads (names are page-suggested, so inside the
    /// envelope) and, with `name`, that download saved into the workspace.
    pub(super) fn download_files(&self, a: &Args<'_>, run: &ManagedRun<'_>) -> Result<Value> {
        let tool = a.tool;
        let workspace = workspace_of(tool, run)?;
        let name = a.opt_str("name")?;
        let save_as = a.opt_str("saveAs")?;
        if name.is_some_and(|n| n.trim().is_empty()) {
            return Err(bad(tool, "`name` must not be empty"));
        }
        if save_as.is_some() && name.is_none() {
            return Err(bad(tool, "`saveAs` needs `name`"));
        }
        let list = self.backend.downloads(DownloadsArgs {})?;
        let mut lines: Vec<String> = list
            .downloads
            .iter()
            .map(|d| format!("{} — {}, {} bytes", d.name, d.state, d.bytes))
            .collect();
        if lines.is_empty() {
            lines.push("(no downloads in this tab)".into());
        }
        let mut out = json!({"count": list.downloads.len()});
        if let Some(name) = name {
            let saver = run.downloads.ok_or_else(|| Error::BrowserUnavailable {
                reason: "this backend cannot save downloads into the workspace".into(),
            })?;
            let field = if save_as.is_some() { "saveAs" } else { "name" };
            let written = saver
                .save(name, workspace, save_as.unwrap_or(name))
                .map_err(|e| confined_error(tool, field, e))?;
            let root = workspace
                .canonicalize()
                .unwrap_or_else(|_| workspace.to_path_buf());
            let shown = written
                .strip_prefix(&root)
                .unwrap_or(&written)
                .to_string_lossy()
                .into_owned();
            lines.push(format!("saved into the workspace as: {shown}"));
            out["saved"] = json!(true);
        }
        out["page"] = json!(wrap_text(&lines.join("\n")));
        Ok(out)
    }
}

/// The workspace of a file tool, or `ACCESS_DENIED` saying the host has not named one.
fn workspace_of<'r>(tool: &'static str, run: &ManagedRun<'r>) -> Result<&'r Path> {
    run.workspace.ok_or_else(|| Error::AccessDenied {
        reason: format!(
            "{tool} needs a workspace directory, and the host has not set one (set_managed_workspace)"
        ),
    })
}
