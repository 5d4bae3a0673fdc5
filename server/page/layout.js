// A layered layout for small graphs (the graphs a studio shows have a handful of nodes): edges
// that close a loop are turned around so the rest flows one way, each node goes on the layer
// after the longest way to it, long edges pass through placeholder points on the layers they
// cross, layers are reordered a few times to cross fewer edges (keeping each subgraph's nodes
// side by side), and nodes are pulled toward their neighbours without overlapping.
//
// `layout(nodes, edges, options)` takes nodes `{id, left, right, height, group}` (how far the
// node reaches left and right of the point it is placed at; `group`: the ids of the subgraphs
// it sits in, outermost first) and edges `{source, target}`; `options` may
// name the `last` node (drawn below all others) and the room to leave: `rankGap` between
// layers, `nodeGap` between nodes, `groupGap` more per subgraph border between them, `frameTop`
// and `frameBottom` more above a layer where subgraphs open and below one where they close. It
// returns
// the centre of each node (`at`: id → {x, y}) and each edge's route (`routes[i]`: `{points,
// back}`, the placeholder points it passes in the direction it is drawn, and whether it runs
// against the flow; `{self: true}` for an edge to its own source; null for an edge to a node
// it was not given).

const PLACEHOLDER_WIDTH = 12;

export function layout(nodes, edges, options = {}) {
  const { last, rankGap = 34, nodeGap = 32, groupGap = 16, frameTop = 0, frameBottom = 0 } = options;
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const usable = (edge) => byId.has(edge.source) && byId.has(edge.target) && edge.source !== edge.target;
  const back = turnedAround(nodes, edges, usable);
  const flow = (edge, i) => (back.has(i) ? [edge.target, edge.source] : [edge.source, edge.target]);
  const rank = ranks(nodes, edges, usable, flow, last);

  // Every node and placeholder point, by layer; the links between adjacent layers.
  const info = new Map(nodes.map((node) => [node.id, { left: node.left, right: node.right, group: node.group ?? [] }]));
  const layers = [];
  const place = (id) => (layers[rank.get(id)] ??= []).push(id);
  nodes.forEach((node) => place(node.id));
  const up = new Map([...info.keys()].map((id) => [id, []]));
  const down = new Map([...info.keys()].map((id) => [id, []]));
  const link = (from, to) => {
    down.get(from).push(to);
    up.get(to).push(from);
  };
  const chains = edges.map((edge, i) => {
    if (!usable(edge)) return null;
    const [from, to] = flow(edge, i);
    const chain = [from];
    for (let r = rank.get(from) + 1; r < rank.get(to); r++) {
      const id = `\u0000${i}:${r}`;
      const group = shared(info.get(from).group, info.get(to).group);
      info.set(id, { left: PLACEHOLDER_WIDTH / 2, right: PLACEHOLDER_WIDTH / 2, group });
      up.set(id, []);
      down.set(id, []);
      rank.set(id, r);
      place(id);
      chain.push(id);
    }
    chain.push(to);
    chain.slice(1).forEach((id, k) => link(chain[k], id));
    return chain;
  });
  for (let r = 0; r < layers.length; r++) layers[r] ??= [];

  order(layers, up, down, info);
  const x = across(layers, up, down, info, nodeGap, groupGap);
  const heights = layers.map((layer) => Math.max(0, ...layer.map((id) => byId.get(id)?.height ?? 0)));
  // Between two layers, room for the titles of the subgraphs that open and the bottoms of those
  // that close.
  const present = layers.map((layer) => new Set(layer.flatMap((id) => info.get(id).group)));
  const outside = (id, r) => info.get(id).group.filter((group) => !present[r]?.has(group)).length;
  const gap = (r) =>
    rankGap +
    frameTop * Math.max(0, ...layers[r].map((id) => outside(id, r - 1))) +
    frameBottom * Math.max(0, ...layers[r - 1].map((id) => outside(id, r)));
  const y = [];
  heights.forEach((height, r) => (y[r] = r === 0 ? height / 2 : y[r - 1] + heights[r - 1] / 2 + gap(r) + height / 2));

  const at = new Map(nodes.map((node) => [node.id, { x: x.get(node.id), y: y[rank.get(node.id)] }]));
  const routes = edges.map((edge, i) => {
    if (edge.source === edge.target && byId.has(edge.source)) return { self: true };
    const chain = chains[i];
    if (!chain) return null;
    const points = chain.slice(1, -1).map((id) => ({ x: x.get(id), y: y[rank.get(id)] }));
    return { points: back.has(i) ? points.reverse() : points, back: back.has(i) };
  });
  return { at, routes };
}

// The edges that close a loop, by index: found by walking from each node in the given order.
function turnedAround(nodes, edges, usable) {
  const out = new Map(nodes.map((node) => [node.id, []]));
  edges.forEach((edge, i) => usable(edge) && out.get(edge.source).push(i));
  const back = new Set();
  const seen = new Map();
  const walk = (id) => {
    seen.set(id, "open");
    for (const i of out.get(id)) {
      const next = edges[i].target;
      if (seen.get(next) === "open") back.add(i);
      else if (!seen.has(next)) walk(next);
    }
    seen.set(id, "done");
  };
  nodes.forEach((node) => seen.has(node.id) || walk(node.id));
  return back;
}

// Each node's layer: one after the longest way to it; `last` (the end) below every other node.
function ranks(nodes, edges, usable, flow, last) {
  const before = new Map(nodes.map((node) => [node.id, []]));
  edges.forEach((edge, i) => {
    if (!usable(edge)) return;
    const [from, to] = flow(edge, i);
    before.get(to).push(from);
  });
  const rank = new Map();
  const rankOf = (id) => {
    if (!rank.has(id)) {
      rank.set(id, 0);
      rank.set(id, Math.max(0, ...before.get(id).map((from) => rankOf(from) + 1)));
    }
    return rank.get(id);
  };
  nodes.forEach((node) => rankOf(node.id));
  if (rank.has(last)) {
    const others = nodes.filter((node) => node.id !== last).map((node) => rank.get(node.id));
    rank.set(last, Math.max(rank.get(last), 1 + Math.max(-1, ...others)));
  }
  return rank;
}

// The subgraphs two groups share: their common start.
function shared(a, b) {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return a.slice(0, n);
}

// Reorders each layer by the mean place of its neighbours, down then up, keeping the order
// that crosses the fewest edges.
function order(layers, up, down, info) {
  let best = layers.map((layer) => [...layer]);
  let fewest = crossings(layers, down);
  for (let sweep = 0; sweep < 8 && fewest > 0; sweep++) {
    const downward = sweep % 2 === 0;
    const range = layers.map((_, r) => r);
    if (!downward) range.reverse();
    for (const r of range.slice(1)) {
      const fixed = layers[downward ? r - 1 : r + 1];
      const place = new Map(fixed.map((id, i) => [id, i]));
      const key = new Map(
        layers[r].map((id, i) => {
          const near = (downward ? up : down).get(id).map((n) => place.get(n));
          return [id, near.length ? near.reduce((a, b) => a + b, 0) / near.length : i];
        }),
      );
      layers[r] = grouped(layers[r], key, info, 0);
    }
    const now = crossings(layers, down);
    if (now < fewest) {
      fewest = now;
      best = layers.map((layer) => [...layer]);
    }
  }
  best.forEach((layer, r) => (layers[r] = layer));
}

// `ids` sorted by `key`, the nodes of one subgraph kept together (sorted by their mean key).
function grouped(ids, key, info, depth) {
  const items = new Map();
  for (const id of ids) {
    const group = info.get(id).group[depth];
    const name = group === undefined ? `node ${id}` : `group ${group}`;
    if (!items.has(name)) items.set(name, { nested: group !== undefined, ids: [] });
    items.get(name).ids.push(id);
  }
  const mean = (list) => list.reduce((sum, id) => sum + key.get(id), 0) / list.length;
  return [...items.values()]
    .map((item) => ({ ...item, key: mean(item.ids) }))
    .sort((a, b) => a.key - b.key)
    .flatMap((item) => (item.nested ? grouped(item.ids, key, info, depth + 1) : item.ids));
}

// How many pairs of edges between adjacent layers cross.
function crossings(layers, down) {
  let count = 0;
  for (let r = 0; r + 1 < layers.length; r++) {
    const place = new Map(layers[r + 1].map((id, i) => [id, i]));
    const pairs = layers[r].flatMap((id, i) => down.get(id).map((to) => [i, place.get(to)]));
    for (let a = 0; a < pairs.length; a++) {
      for (let b = a + 1; b < pairs.length; b++) {
        if ((pairs[a][0] - pairs[b][0]) * (pairs[a][1] - pairs[b][1]) < 0) count++;
      }
    }
  }
  return count;
}

// The x of each node: packed in order, then pulled toward its neighbours' mean a few times,
// never closer to the next than their reaches and the gap (more between subgraphs).
function across(layers, up, down, info, nodeGap, groupGap) {
  const x = new Map();
  const gap = (a, b) => {
    const ga = info.get(a).group;
    const gb = info.get(b).group;
    const apart = ga.length + gb.length - 2 * shared(ga, gb).length;
    return info.get(a).right + info.get(b).left + nodeGap + groupGap * apart;
  };
  for (const layer of layers) {
    layer.forEach((id, i) => x.set(id, i === 0 ? 0 : x.get(layer[i - 1]) + gap(layer[i - 1], id)));
  }
  for (let round = 0; round < 8; round++) {
    const downward = round % 2 === 0;
    for (const layer of downward ? layers : [...layers].reverse()) {
      const wanted = layer.map((id) => {
        const near = [...up.get(id), ...down.get(id)].map((n) => x.get(n));
        return near.length ? near.reduce((a, b) => a + b, 0) / near.length : x.get(id);
      });
      const left = [...wanted];
      for (let i = 1; i < layer.length; i++) left[i] = Math.max(left[i], left[i - 1] + gap(layer[i - 1], layer[i]));
      const right = [...wanted];
      for (let i = layer.length - 2; i >= 0; i--) {
        right[i] = Math.min(right[i], right[i + 1] - gap(layer[i], layer[i + 1]));
      }
      layer.forEach((id, i) => x.set(id, (left[i] + right[i]) / 2));
    }
  }
  return x;
}
