// The graph panel: the chosen graph drawn as SVG from `/assistants/{id}/graph?xray=true`, its
// subgraphs folded into one node until clicked open (and folded again from their frame's
// title). Conditional edges are dashed. While a run streams, `tasks` events light the nodes
// running, `updates` mark the nodes that ran, and beside each node go the tokens of its model
// calls (`events`: `on_chat_model_end`'s `usage_metadata`) and the outcome of its tool calls
// (the `status` of the tool messages it wrote).

import { api } from "./api.js";
import { layout } from "./layout.js";

const SVG = "http://www.w3.org/2000/svg";
const START = "__start__";
const END = "__end__";
// Room at the right of every node for its notes.
const NOTES = 112;
const HEIGHT = 30;
const PAD = 12;
const TITLE = 18;
// Notes shown per node; earlier ones are counted.
const SHOWN_NOTES = 3;

function element(name, attributes = {}, text) {
  const made = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) made.setAttribute(key, String(value));
  if (text !== undefined) made.textContent = text;
  return made;
}

const measure = document.createElement("canvas").getContext("2d");
function textWidth(text) {
  measure.font = "13px system-ui, sans-serif";
  return measure.measureText(text).width;
}

// The subgraph frames a node id sits in (`a:b:c` sits in `a` and `a:b`), outermost first.
function framesOf(id) {
  const parts = id.split(":");
  return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join(":"));
}

// The node id an event's namespace (`node:task|node:task`) and node name stand for.
function nodePath(namespace, name) {
  return [...namespace.map((level) => level.split(":")[0]), name].join(":");
}

export class GraphView {
  constructor(svg, status) {
    this.svg = svg;
    this.status = status;
    this.nodes = [];
    this.edges = [];
    this.open = new Set();
    this.running = new Map(); // task id → node id
    this.marks = new Map(); // node id → "ran" | "failed" | "paused"
    this.notes = new Map(); // node id → [{text, kind}]
    this.told = new Set(); // the tool calls noted
    this.next = [];
    this.size = null;
    new ResizeObserver(() => this.fit()).observe(svg.parentElement);
    svg.addEventListener("click", (event) => this.toggle(event.target));
    svg.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        this.toggle(event.target);
      }
    });
  }

  async load(assistantId) {
    this.open.clear();
    this.startRun();
    try {
      const drawing = await api(`/assistants/${encodeURIComponent(assistantId)}/graph?xray=true`);
      this.nodes = drawing.nodes ?? [];
      this.edges = drawing.edges ?? [];
      this.status.textContent = "";
    } catch (error) {
      this.nodes = [];
      this.edges = [];
      this.status.textContent = `The graph could not be drawn: ${error.message}`;
    }
    this.render();
  }

  // Forgets what the last run lit and noted.
  startRun() {
    this.running.clear();
    this.marks.clear();
    this.notes.clear();
    this.told.clear();
    this.paint();
  }

  // Lights `nodes` (a checkpoint's `next`, top-level names) as the ones that run next.
  showNext(nodes) {
    this.next = nodes ?? [];
    this.paint();
  }

  // One streamed event: `mode` and `namespace` from its name (`tasks|research:…`), its data.
  onEvent(mode, namespace, data) {
    if (mode === "tasks" && data?.name) {
      const id = nodePath(namespace, data.name);
      if (!("result" in data || "error" in data || "interrupts" in data)) {
        this.running.set(data.id ?? id, id);
      } else {
        this.running.delete(data.id ?? id);
        this.marks.set(id, data.error ? "failed" : data.interrupts?.length ? "paused" : "ran");
      }
    } else if (mode === "updates" && data && typeof data === "object") {
      for (const [node, update] of Object.entries(data)) {
        if (node.startsWith("__")) continue;
        const id = nodePath(namespace, node);
        if (!this.marks.has(id)) this.marks.set(id, "ran");
        for (const message of messagesIn(update)) {
          // A subgraph node's update carries its subgraph's messages again: each call is
          // noted once, beside the node inside that ran it.
          const call = message.tool_call_id ?? message.id;
          if (message.type !== "tool" || !message.status || this.told.has(call)) continue;
          if (call) this.told.add(call);
          this.note(id, `${message.name ?? "tool"}: ${message.status}`, `tool-${message.status}`);
        }
      }
    } else if (mode === "events" && data?.event === "on_chat_model_end") {
      const usage = data.data?.output?.usage_metadata;
      const metadata = data.metadata ?? {};
      const levels = String(metadata.langgraph_checkpoint_ns ?? "").split("|").filter(Boolean);
      const id = levels.length ? nodePath(levels.slice(0, -1), levels.at(-1).split(":")[0]) : metadata.langgraph_node;
      if (usage && id) {
        this.note(id, `tokens ${usage.input_tokens ?? "?"} in · ${usage.output_tokens ?? "?"} out`, "tokens");
      }
    } else {
      return;
    }
    this.paint();
  }

  note(id, text, kind) {
    if (!this.notes.has(id)) this.notes.set(id, []);
    this.notes.get(id).push({ text, kind });
  }

  // The node drawn for `id`: itself, or the folded subgraph it sits in.
  shownAs(id) {
    return framesOf(id).find((frame) => !this.open.has(frame)) ?? id;
  }

  toggle(target) {
    const handle = target.closest?.("[data-toggle]");
    if (!handle) return;
    const frame = handle.dataset.toggle;
    if (this.open.has(frame)) {
      for (const inner of [...this.open]) if (inner === frame || inner.startsWith(`${frame}:`)) this.open.delete(inner);
    } else {
      this.open.add(frame);
    }
    this.render();
  }

  // The nodes and edges as shown: folded subgraphs as one node, their inside edges left out.
  shown() {
    const frames = new Set(this.nodes.flatMap((node) => framesOf(node.id)));
    const nodes = new Map();
    for (const node of this.nodes) {
      const id = this.shownAs(node.id);
      if (nodes.has(id)) continue;
      const folded = frames.has(id);
      const subgraph = folded || node.metadata?.subgraph;
      const kind = id === START ? "start" : id === END ? "end" : subgraph ? "subgraph" : "node";
      const label = id === START ? "start" : id === END ? "end" : id.split(":").at(-1);
      nodes.set(id, { id, kind, label, folded, group: framesOf(id) });
    }
    const edges = new Map();
    for (const edge of this.edges) {
      const source = this.shownAs(edge.source);
      const target = this.shownAs(edge.target);
      if (source === target && edge.source !== edge.target) continue;
      const key = `${source}\u0000${target}`;
      const seen = edges.get(key);
      edges.set(key, { source, target, conditional: Boolean(edge.conditional) && (seen?.conditional ?? true) });
    }
    return { nodes: [...nodes.values()], edges: [...edges.values()] };
  }

  render() {
    const { nodes, edges } = this.shown();
    for (const node of nodes) {
      node.boxWidth = Math.max(56, Math.ceil(textWidth(node.label)) + (node.kind === "subgraph" ? 44 : 28));
      node.left = node.boxWidth / 2;
      node.right = node.boxWidth / 2 + NOTES;
      node.height = HEIGHT;
    }
    const { at, routes } = layout(nodes, edges, { last: END, frameTop: PAD + TITLE, frameBottom: PAD });
    const box = new Map(
      nodes.map((node) => {
        const { x, y } = at.get(node.id);
        return [node.id, { x, y, w: node.boxWidth, h: node.height }];
      }),
    );
    const frames = this.frameBoxes(nodes, at);

    const drawn = element("g");
    const arrow = element("marker", {
      id: "arrow",
      viewBox: "0 0 10 10",
      refX: 9,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: "auto-start-reverse",
    });
    arrow.append(element("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow-head" }));
    const defs = element("defs");
    defs.append(arrow);
    drawn.append(defs);
    for (const [frame, b] of [...frames].sort((a, b) => a[0].split(":").length - b[0].split(":").length)) {
      const group = element("g", { class: "frame", "data-frame": frame });
      group.append(element("rect", { x: b.x, y: b.y, width: b.w, height: b.h, rx: 8 }));
      const title = element("text", { x: b.x + 10, y: b.y + 14, class: "frame-title", "data-toggle": frame });
      title.setAttribute("tabindex", "0");
      title.setAttribute("role", "button");
      title.setAttribute("aria-expanded", "true");
      title.textContent = `▾ ${frame.split(":").at(-1)}`;
      group.append(title);
      drawn.append(group);
    }
    edges.forEach((edge, i) => {
      const route = routes[i];
      if (!route) return;
      const d = path(box.get(edge.source), box.get(edge.target), route);
      const kind = edge.conditional ? "edge conditional" : "edge";
      const ends = { "data-source": edge.source, "data-target": edge.target };
      drawn.append(element("path", { d, class: kind, ...ends, "marker-end": "url(#arrow)" }));
    });
    for (const node of nodes) drawn.append(this.drawNode(node, box.get(node.id)));

    // Room on the left for edges drawn against the flow, on the right for the notes.
    const spans = [
      ...[...box.values()].map((b) => [b.x - b.w / 2 - 48, b.y - b.h / 2, b.x + b.w / 2 + NOTES, b.y + b.h / 2]),
      ...[...frames.values()].map((b) => [b.x - 48, b.y, b.x + b.w, b.y + b.h]),
    ];
    const left = Math.min(...spans.map((s) => s[0]));
    const top = Math.min(...spans.map((s) => s[1])) - 8;
    const right = Math.max(...spans.map((s) => s[2])) + 8;
    const bottom = Math.max(...spans.map((s) => s[3])) + 8;
    this.svg.replaceChildren(...(nodes.length ? drawn.childNodes : []));
    this.size = nodes.length ? { width: right - left, height: bottom - top } : null;
    if (this.size) this.svg.setAttribute("viewBox", `${left} ${top} ${this.size.width} ${this.size.height}`);
    this.fit();
    this.paint();
  }

  // Scales the drawing down to its panel, but not below what stays readable (the panel then
  // scrolls).
  fit() {
    if (!this.size) return;
    const panel = this.svg.parentElement;
    const room = { width: panel.clientWidth - 16, height: panel.clientHeight - 16 };
    const scale = Math.max(0.7, Math.min(1, room.width / this.size.width, room.height / this.size.height));
    this.svg.setAttribute("width", String(Math.round(this.size.width * scale)));
    this.svg.setAttribute("height", String(Math.round(this.size.height * scale)));
  }

  drawNode(node, b) {
    const group = element("g", { class: `node ${node.kind}`, "data-node": node.id });
    const round = node.kind === "start" || node.kind === "end";
    const attributes = { x: b.x - b.w / 2, y: b.y - b.h / 2, width: b.w, height: b.h, rx: round ? b.h / 2 : 6 };
    if (node.kind === "subgraph") {
      group.append(element("rect", { ...attributes, x: attributes.x + 4, y: attributes.y - 4, class: "behind" }));
    }
    group.append(element("rect", attributes));
    const labelX = b.x - (node.kind === "subgraph" ? 8 : 0);
    group.append(element("text", { x: labelX, y: b.y + 4.5, "text-anchor": "middle" }, node.label));
    if (node.folded) {
      group.dataset.toggle = node.id;
      group.setAttribute("tabindex", "0");
      group.setAttribute("role", "button");
      group.setAttribute("aria-expanded", "false");
      const plus = { x: b.x + b.w / 2 - 14, y: b.y + 5, class: "unfold", "text-anchor": "middle" };
      group.append(element("text", plus, "+"));
    }
    group.append(element("text", { x: b.x + b.w / 2 + 8, y: b.y - b.h / 2 + 11, class: "notes" }));
    return group;
  }

  // Each open subgraph's frame: around its nodes and inner frames, with room for its title.
  frameBoxes(nodes, at) {
    const frames = new Map();
    const grow = (frame, x0, y0, x1, y1) => {
      const b = frames.get(frame) ?? { x0, y0, x1, y1 };
      const [left, top] = [Math.min(b.x0, x0), Math.min(b.y0, y0)];
      frames.set(frame, { x0: left, y0: top, x1: Math.max(b.x1, x1), y1: Math.max(b.y1, y1) });
    };
    for (const node of nodes) {
      const { x, y } = at.get(node.id);
      for (const frame of node.group) grow(frame, x - node.left, y - HEIGHT / 2, x + node.right, y + HEIGHT / 2);
    }
    const boxes = new Map();
    const deepestFirst = [...frames.keys()].sort((a, b) => b.split(":").length - a.split(":").length);
    for (const frame of deepestFirst) {
      const inner = frames.get(frame);
      for (const [other, b] of boxes) {
        if (other.startsWith(`${frame}:`)) {
          inner.x0 = Math.min(inner.x0, b.x);
          inner.y0 = Math.min(inner.y0, b.y);
          inner.x1 = Math.max(inner.x1, b.x + b.w);
          inner.y1 = Math.max(inner.y1, b.y + b.h);
        }
      }
      const [w, h] = [inner.x1 - inner.x0 + 2 * PAD, inner.y1 - inner.y0 + 2 * PAD + TITLE];
      boxes.set(frame, { x: inner.x0 - PAD, y: inner.y0 - PAD - TITLE, w, h });
    }
    return boxes;
  }

  // Sets each drawn node's light and notes from what the run has told so far.
  paint() {
    const state = new Map();
    const notes = new Map();
    const rank = { ran: 1, paused: 2, failed: 3, running: 4 };
    const raise = (id, mark) => {
      const shown = this.shownAs(id);
      if ((rank[mark] ?? 0) > (rank[state.get(shown)] ?? 0)) state.set(shown, mark);
    };
    for (const [id, mark] of this.marks) raise(id, mark);
    for (const id of this.running.values()) raise(id, "running");
    for (const [id, list] of this.notes) {
      const shown = this.shownAs(id);
      notes.set(shown, [...(notes.get(shown) ?? []), ...list]);
    }
    const next = new Set(this.next.map((id) => this.shownAs(id)));
    // An open subgraph's frame is lit as its node would be.
    for (const group of this.svg.querySelectorAll("g.node, g.frame")) {
      const id = group.dataset.node ?? group.dataset.frame;
      for (const mark of ["running", "ran", "failed", "paused"]) group.classList.toggle(mark, state.get(id) === mark);
      group.classList.toggle("next", next.has(id));
      if (!group.dataset.node) continue;
      const text = group.querySelector("text.notes");
      const list = notes.get(id) ?? [];
      const lines = list.slice(-SHOWN_NOTES);
      const spans = lines.map((line, i) =>
        element("tspan", { x: text.getAttribute("x"), dy: i === 0 ? 0 : 13, class: `note ${line.kind}` }, line.text),
      );
      if (list.length > SHOWN_NOTES) {
        const earlier = `and ${list.length - SHOWN_NOTES} earlier`;
        spans.push(element("tspan", { x: text.getAttribute("x"), dy: 13, class: "note more" }, earlier));
      }
      text.replaceChildren(...spans);
    }
  }
}

// The messages in a node's update, in any field: a list, one message, or an overwrite of them.
function messagesIn(update) {
  if (!update || typeof update !== "object") return [];
  return Object.values(update).flatMap((value) => {
    const written = value?.$overwrite ?? value;
    const items = Array.isArray(written) ? written : [written];
    return items.filter((item) => item && typeof item === "object" && typeof item.type === "string");
  });
}

// An edge's path: down from the source's bottom to the target's top through the points the
// layout gave, or, against the flow, up along the left of both boxes; a loop to itself at the
// left of its node.
function path(from, to, route) {
  if (route.self) {
    const x = from.x - from.w / 2;
    return `M${x},${from.y - 6} C${x - 40},${from.y - 26} ${x - 40},${from.y + 26} ${x},${from.y + 6}`;
  }
  if (route.back) {
    const start = { x: from.x - from.w / 2, y: from.y };
    const end = { x: to.x - to.w / 2, y: to.y };
    const side = Math.min(start.x, end.x, ...route.points.map((p) => p.x)) - 36;
    return `M${start.x},${start.y} C${side},${start.y} ${side},${end.y} ${end.x},${end.y}`;
  }
  const points = [{ x: from.x, y: from.y + from.h / 2 }, ...route.points, { x: to.x, y: to.y - to.h / 2 }];
  let d = `M${points[0].x},${points[0].y}`;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1];
    const b = points[i];
    const mid = (a.y + b.y) / 2;
    d += ` C${a.x},${mid} ${b.x},${mid} ${b.x},${b.y}`;
  }
  return d;
}
