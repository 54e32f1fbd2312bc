"""opencode: a plugin that puts the pack in the system prompt and hands new wakes at a prompt.

opencode loads every ``*.js`` in ``.opencode/plugins/`` (the user's:
``~/.config/opencode/plugins/``) at start; what rouse's does, and why, is docs/wiring.md's
opencode section and the comments in :data:`_PLUGIN`. The project's file is committed:
it calls ``rouse`` by name and names the tree from the project. The user's, for the
global tree, pins the rouse that wired it and gives way in a project with its own rouse
plugin: one pack per session.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from rouse.agents.hook_commands import CANNOT_RUN, CANNOT_RUN_SHARED
from rouse.agents.wiring import Wired, Wiring, is_own, remove_own, update_file

OPENCODE_PLUGIN = ".opencode/plugins/rouse.js"
GLOBAL_PLUGIN = ".config/opencode/plugins/rouse.js"  # under $HOME (opencode: $XDG_CONFIG_HOME)
LABEL = "opencode plugin"
#: The plugin's first line: how ``rouse wire --remove`` knows the file is rouse's own.
HEAD = "// rouse: the memory pack in opencode's system prompt"
#: How long the plugin lets one ``rouse`` run before it gives up on it (milliseconds).
WAIT_MS = 30_000
#: What opencode writes into the project's ``.opencode/`` when it starts (its
#: plugin helper package, installed from npm), and keeps out of git itself with
#: its own ``.opencode/.gitignore``.
INSTALLED = ("node_modules", "package.json", "package-lock.json", "bun.lock")

_PLUGIN = """\
__HEAD__
// (written by `rouse wire --opencode`: wiring again replaces this file,
// `rouse wire --remove` deletes it). It needs nothing installed: node: modules only.
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { dirname, join } from "node:path"

const TREE = __TREE__ // the memory tree (a relative path is the project's)
const PINNED = __PINNED__ // the rouse that wired this, tried before `rouse` on PATH
const GLOBAL = __GLOBAL__ // the global tree's plugin: a project's own rouse plugin wins
const CANNOT_RUN = __CANNOT_RUN__
const WAIT_MS = __WAIT_MS__

// one run of a program, its stdout; null when it cannot be started at all
function run(program, args, input, cwd) {
  return new Promise((resolve) => {
    let out = ""
    let child
    try {
      child = spawn(program, args, { cwd, stdio: ["pipe", "pipe", "ignore"] })
    } catch {
      return resolve(null)
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), WAIT_MS)
    child.on("error", () => {
      clearTimeout(timer)
      resolve(null)
    })
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk) => (out += chunk))
    child.on("close", () => {
      clearTimeout(timer)
      resolve(out)
    })
    child.stdin.on("error", () => {})
    child.stdin.end(input)
  })
}

// `rouse pack --hook opencode` for one event of one session (the pinned rouse, else PATH's)
async function rouse(event, sessionID, cwd) {
  const args = ["pack", "--memory", TREE, "--hook", "opencode"]
  const input = JSON.stringify({ hook_event_name: event, session_id: sessionID, cwd })
  for (const program of PINNED ? [PINNED, "rouse"] : ["rouse"]) {
    const out = await run(program, args, input, cwd)
    if (out !== null) return out.trim()
  }
  return null
}

// a project's own rouse plugin, from the session's directory up to its worktree
function projectHasOwn(directory, worktree) {
  for (let dir = directory; dir; dir = dirname(dir)) {
    for (const folder of ["plugins", "plugin"]) {
      if (existsSync(join(dir, ".opencode", folder, "rouse.js"))) return true
    }
    if (dir === worktree || dirname(dir) === dir) return false
  }
  return false
}

// an id opencode accepts for a message part: "prt_", then time-ordered hex
let counter = 0
function partID() {
  const stamp = (BigInt(Date.now()) * 4096n + BigInt(++counter % 4096)).toString(16)
  const tail = Array.from({ length: 14 }, () => Math.floor(Math.random() * 36).toString(36))
  return "prt_" + stamp.padStart(12, "0").slice(-12) + tail.join("")
}

export const RouseMemory = async ({ directory, worktree }) => {
  if (GLOBAL && projectHasOwn(directory, worktree)) return {}
  const packs = new Map()
  // the session's pack, made once, at its first model request or prompt
  const pack = (sessionID) => {
    if (!packs.has(sessionID)) {
      const made = rouse("SessionStart", sessionID, directory)
      packs.set(sessionID, made.then((out) => out ?? CANNOT_RUN))
    }
    return packs.get(sessionID)
  }
  return {
    "experimental.chat.system.transform": async (input, output) => {
      if (!input.sessionID) return
      const text = await pack(input.sessionID)
      if (text) output.system.push(text)
    },
    "chat.message": async (input, output) => {
      if (!input.sessionID || !output.message) return
      const opening = !packs.has(input.sessionID)
      await pack(input.sessionID) // first: the pack marks the wakes it shows as seen
      if (opening) return // the session's first prompt: its pack, made now, shows them all
      const text = await rouse("UserPromptSubmit", input.sessionID, directory)
      if (!text) return
      output.parts.push({
        id: partID(),
        sessionID: input.sessionID,
        messageID: output.message.id,
        type: "text",
        text,
        synthetic: true,
      })
    },
  }
}
"""


def opencode_path(w: Wiring) -> Path:
    if w.project is None:
        return w.home / GLOBAL_PLUGIN
    return w.project / OPENCODE_PLUGIN


def plugin_text(w: Wiring, executable: str | None) -> str:
    """The plugin for this tree. The project's names no path of this machine."""
    shared = w.project is not None
    values = {
        "__HEAD__": HEAD,
        "__TREE__": json.dumps(str(w.tree) if w.project is None else w.tree_ref),
        "__PINNED__": json.dumps(None if shared or not executable else executable),
        "__GLOBAL__": json.dumps(w.project is None),
        "__CANNOT_RUN__": json.dumps(CANNOT_RUN_SHARED if shared else CANNOT_RUN),
        "__WAIT_MS__": str(WAIT_MS),
    }
    # one pass: a value that holds a placeholder's name (a tree called mem__GLOBAL__x)
    # is never filled in again
    pattern = re.compile("|".join(re.escape(key) for key in values))
    return pattern.sub(lambda found: values[found.group(0)], _PLUGIN)


def wire_opencode(w: Wiring, result: Wired, executable: str | None) -> None:
    path = opencode_path(w)
    done = update_file(path, plugin_text(w, executable), LABEL)
    result.done.append(done)
    if w.project is not None and not done.startswith("unchanged"):
        result.printed += [
            "opencode installs its plugin package into .opencode/ when it starts "
            f"({', '.join(INSTALLED)}) and leaves them out of git with its own "
            ".opencode/.gitignore; commit .opencode/plugins/rouse.js."
        ]


def unwire_opencode(w: Wiring, result: Wired) -> None:
    remove_own(opencode_path(w), lambda t: t.startswith(HEAD), LABEL, result)


def has_plugin(w: Wiring) -> bool:
    return is_own(opencode_path(w), lambda t: t.startswith(HEAD))
