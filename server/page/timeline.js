// The thread's checkpoints, oldest first (`POST /threads/{id}/history`): each says what ran to
// make it and what runs next; a branch (a fork, or a run from an earlier checkpoint) is
// indented under the checkpoint it left. Picking one shows its state, one
// field per box. Editing fields and forking writes them at that checkpoint (`POST
// /threads/{id}/state` with its `checkpoint_id`, each field as `{"$overwrite": value}` so it
// is set as written rather than merged by the field's reducer), which makes a new checkpoint
// branching from it; running from it starts a run with its `checkpoint_id`.

import { api } from "./api.js";

const LIMIT = 100;
// What made a checkpoint, by its `source`, when no node did: the run's input, `update_state`
// (a fork's edit), or a copy of an earlier checkpoint that a run goes on from.
const WORDS = { input: "input", update: "edited", fork: "fork" };

export class Timeline {
  // `on.select(state)` when a checkpoint is picked (null when none), `on.fork(checkpointId)`
  // once a fork is written, `on.replay(checkpointId)` to run from a checkpoint.
  constructor({ list, form, fields, title, status, replay }, on) {
    Object.assign(this, { list, form, fields, title, status, replayButton: replay, on });
    this.threadId = null;
    this.states = [];
    this.selected = null;
    list.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-checkpoint]");
      if (button) this.select(button.dataset.checkpoint);
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.fork();
    });
    replay.addEventListener("click", () => {
      if (this.selected) on.replay(this.selected.checkpoint.checkpoint_id);
    });
  }

  // Lists the checkpoints of `threadId` (none without a thread), keeping the pick if it is there.
  async load(threadId) {
    this.threadId = threadId;
    this.states = threadId ? await api(`/threads/${threadId}/history`, { limit: LIMIT }) : [];
    this.states.reverse();
    const kept = this.states.find((s) => s.checkpoint.checkpoint_id === this.selected?.checkpoint.checkpoint_id);
    this.render();
    this.select(kept?.checkpoint.checkpoint_id ?? null);
  }

  render() {
    const byId = new Map(this.states.map((s) => [s.checkpoint.checkpoint_id, s]));
    // How far each checkpoint is indented: one more than its parent's when its parent had
    // another child before it (a fork, or a run from an earlier checkpoint).
    const depth = new Map();
    const firstChild = new Map();
    const items = this.states.map((state) => {
      const id = state.checkpoint.checkpoint_id;
      const parentId = state.parent_checkpoint?.checkpoint_id;
      const parent = byId.get(parentId);
      const branched = Boolean(parent) && firstChild.has(parentId);
      if (parent && !branched) firstChild.set(parentId, id);
      depth.set(id, (depth.get(parentId) ?? 0) + (branched ? 1 : 0));
      const button = document.createElement("button");
      button.type = "button";
      button.className = "checkpoint";
      button.dataset.checkpoint = id;
      button.style.setProperty("--depth", String(Math.min(depth.get(id), 4)));
      const step = span("step", `#${state.metadata?.step ?? "?"}`);
      const source = state.metadata?.source ?? "";
      const ran = WORDS[source] ?? (parent ? `ran ${names(parent.next)}` : source);
      const next = state.next?.length ? ` → ${names(state.next)}` : "";
      button.append(step, span("what", `${ran}${next}`), span("id", short(id)));
      if (branched) {
        button.classList.add("branch");
        button.append(span("from", `from #${parent.metadata?.step ?? "?"} ${short(parentId)}`));
      }
      const item = document.createElement("li");
      item.append(button);
      return item;
    });
    if (!items.length) {
      const none = document.createElement("li");
      none.className = "muted";
      none.textContent = this.threadId ? "No checkpoints yet." : "No thread yet: a message starts one.";
      items.push(none);
    }
    this.list.replaceChildren(...items);
  }

  // Shows the checkpoint `id`'s state (or none).
  select(id) {
    this.selected = this.states.find((s) => s.checkpoint.checkpoint_id === id) ?? null;
    for (const button of this.list.querySelectorAll("button[data-checkpoint]")) {
      button.setAttribute("aria-pressed", String(button.dataset.checkpoint === id));
      if (button.dataset.checkpoint === id) button.scrollIntoView({ block: "nearest" });
    }
    this.form.hidden = !this.selected;
    this.say("");
    this.on.select(this.selected);
    if (!this.selected) return;
    const { values, next, metadata, interrupts } = this.selected;
    const waiting = interrupts?.length ? ` · asks ${JSON.stringify(interrupts[0].value)}` : "";
    this.title.textContent =
      `checkpoint ${short(id)} · step ${metadata?.step ?? "?"} · ` +
      `${next?.length ? `next ${names(next)}` : "nothing next"}${waiting}`;
    const shown = isRecord(values) ? Object.entries(values) : [["value", values]];
    this.fields.replaceChildren(...shown.map(([name, value]) => field(name, value)));
    this.form.scrollTop = 0;
  }

  // Writes the edited fields at the picked checkpoint; the thread then goes on from the fork.
  async fork() {
    if (!this.selected) return;
    this.say("");
    const edited = {};
    for (const box of this.fields.querySelectorAll("textarea")) {
      if (box.value === box.defaultValue) continue;
      try {
        edited[box.dataset.field] = JSON.parse(box.value);
      } catch (error) {
        this.say(`${box.dataset.field} is not JSON: ${error.message}`, true);
        box.focus();
        return;
      }
    }
    if (!Object.keys(edited).length) {
      this.say("Edit a field first: a fork writes the fields changed here.", true);
      return;
    }
    const whole = !isRecord(this.selected.values);
    const values = whole
      ? edited.value
      : Object.fromEntries(Object.entries(edited).map(([name, value]) => [name, { $overwrite: value }]));
    const at = this.selected.checkpoint.checkpoint_id;
    try {
      const made = await api(`/threads/${this.threadId}/state`, { values, checkpoint_id: at });
      const id = made.checkpoint.checkpoint_id;
      this.selected = { checkpoint: { checkpoint_id: id } };
      await this.load(this.threadId);
      this.say(`Forked from ${short(at)}: checkpoint ${short(id)}.`);
      this.on.fork(id);
    } catch (error) {
      this.say(`The fork was refused: ${error.message}`, true);
    }
  }

  say(text, isError) {
    this.status.textContent = text;
    this.status.className = isError ? "error" : "muted";
  }
}

function isRecord(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

// Node names as the graph shows them.
function names(nodes) {
  const shown = nodes.map((node) => ({ __start__: "start", __end__: "end" })[node] ?? node);
  return shown.length ? shown.join(", ") : "nothing";
}

// Enough of a checkpoint id to tell it from its neighbours: ids start with the time they were
// made, so their ends differ.
function short(id) {
  return id.split("-")[0].slice(-8);
}

function span(className, text) {
  const made = document.createElement("span");
  made.className = className;
  made.textContent = text;
  return made;
}

// One field of a state: its name and its value as JSON, in a box to edit.
function field(name, value) {
  const label = document.createElement("label");
  label.className = "field";
  const box = document.createElement("textarea");
  box.dataset.field = name;
  box.spellcheck = false;
  box.defaultValue = JSON.stringify(value, null, 2) ?? "null";
  box.rows = Math.min(8, box.defaultValue.split("\n").length);
  label.append(span("name", name), box);
  return label;
}
