//! A layered (Sugiyama-style) layout of a directed acyclic graph, the one layout of the CLI's SVG
//! and of the plan viewer's page (served by the planning service, so both draw the same ranks,
//! order and coordinates).
//!
//! Steps, each deterministic:
//! 1. **Ranks** by longest path from the sources (a Kahn topological order), two ranks per edge
//!    when edges carry labels: the rank between holds the label.
//! 2. **Dummies** on every rank an edge crosses, one of them (the first) the edge's label box.
//! 3. **Order** within ranks: first appearance in a breadth-first walk, then barycentre sweeps
//!    down and up ([`SWEEPS`] times), keeping the order of fewest crossings (counted per pair of
//!    adjacent ranks with a Fenwick tree, O(E log V)).
//! 4. **Coordinates** across ranks: per rank the positions closest (least squares) to the mean of
//!    each box's neighbours in the rank before (down) or after (up), subject to the order and to
//!    boxes [`NODE_SEP`] apart, solved exactly by pool-adjacent-violators (O(n) per rank); along
//!    ranks: each rank as thick as its thickest box, [`RANK_SEP`] apart.
//!
//! Boxes of one rank never overlap (the separation is a constraint), and ranks never overlap
//! (each is as thick as its largest box), so neither vertex boxes nor edge labels overlap.
//! Time O(S x (V + E + D) log(V + D)) for S sweeps and D dummies (the ranks the edges skip).

/// Gap between two boxes of one rank, px.
pub const NODE_SEP: f64 = 18.0;
/// Gap between two ranks, px.
pub const RANK_SEP: f64 = 36.0;
/// Margin around the drawing, px.
pub const MARGIN: f64 = 16.0;
/// Barycentre sweeps (each down and up) of the crossing reduction.
pub const SWEEPS: usize = 6;
/// Coordinate refinement passes (each down and up).
const PASSES: usize = 4;

/// Where ranks go: sources on the left (Flink's dashboard) or on top.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
pub enum Direction {
    /// Ranks left to right (as Flink's dashboard).
    #[default]
    #[serde(rename = "LR")]
    LeftToRight,
    /// Ranks top to bottom.
    #[serde(rename = "TB")]
    TopToBottom,
}

/// A box's size, px.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Size {
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// A point, px, `y` down.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Point {
    /// Across.
    pub x: f64,
    /// Down.
    pub y: f64,
}

/// A placed box: its top-left corner and size, px.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Rect {
    /// Left.
    pub x: f64,
    /// Top.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

impl Rect {
    /// Whether two boxes share any area (touching edges do not count).
    pub fn intersects(&self, other: &Rect) -> bool {
        self.x < other.x + other.width
            && other.x < self.x + self.width
            && self.y < other.y + other.height
            && other.y < self.y + self.height
    }
}

/// A laid-out edge: the polyline from the source's box to the target's, and its label's box.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeRoute {
    /// Points from the source box's side to the target box's side.
    pub points: Vec<Point>,
    /// The label's box, when the edge has a label.
    pub label: Option<Rect>,
}

/// A laid-out graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Width of the drawing, px (margins included).
    pub width: f64,
    /// Height of the drawing, px.
    pub height: f64,
    /// Per node (in the input's order), its box.
    pub nodes: Vec<Rect>,
    /// Per edge (in the input's order), its route.
    pub edges: Vec<EdgeRoute>,
    /// Per node, its rank (0 for sources; ranks of labels in between count).
    pub ranks: Vec<usize>,
}

/// Lays out `nodes` (sizes) joined by `edges` (`(source, target, label size)`, indices into
/// `nodes`) in `direction`. The graph must be acyclic; an edge of a cycle (or a self-loop) is
/// drawn backwards from its rank order rather than refused. Edge labels (when any edge has
/// one) get ranks of their own. See the module documentation for the steps and their cost.
///
/// # Panics
/// If an edge names a node index out of range.
pub fn lay_out(
    nodes: &[Size],
    edges: &[(usize, usize, Option<Size>)],
    direction: Direction,
) -> Layout {
    let n = nodes.len();
    let step = if edges.iter().any(|e| e.2.is_some()) {
        2
    } else {
        1
    };
    let ranks = longest_path_ranks(n, edges, step);
    let rank_count = ranks.iter().max().map_or(0, |r| r + 1);

    // Items per rank, and per edge its chain of dummies (item positions in their ranks).
    // Items are the nodes, then the edges' dummies; `is_label` marks the label dummies.
    let mut is_label: Vec<bool> = vec![false; n];
    let mut item_rank: Vec<usize> = ranks.clone();
    let mut item_size: Vec<Size> = nodes.to_vec();
    let mut chains: Vec<Vec<usize>> = Vec::with_capacity(edges.len());
    // Adjacency between items of consecutive ranks: (upper item, lower item).
    let mut links: Vec<(usize, usize)> = Vec::new();
    for &(s, t, label) in edges {
        let (rs, rt) = (ranks[s], ranks[t]);
        let mut chain = Vec::new();
        let mut previous = s;
        if rt > rs {
            for r in rs + 1..rt {
                let labelled = r == rs + 1 && label.is_some();
                let id = is_label.len();
                is_label.push(labelled);
                item_rank.push(r);
                item_size.push(if labelled {
                    label.unwrap_or(Size {
                        width: 0.0,
                        height: 0.0,
                    })
                } else {
                    Size {
                        width: 0.0,
                        height: 0.0,
                    }
                });
                links.push((previous, id));
                chain.push(id);
                previous = id;
            }
            links.push((previous, t));
        }
        chains.push(chain);
    }
    let count = is_label.len();
    let mut up: Vec<Vec<usize>> = vec![Vec::new(); count];
    let mut down: Vec<Vec<usize>> = vec![Vec::new(); count];
    for &(a, b) in &links {
        down[a].push(b);
        up[b].push(a);
    }

    let mut layers = initial_order(count, &item_rank, rank_count, &down);
    reduce_crossings(&mut layers, &up, &down);

    // Thickness along the rank axis, breadth across it.
    let along = |s: Size| match direction {
        Direction::LeftToRight => s.width,
        Direction::TopToBottom => s.height,
    };
    let across = |s: Size| match direction {
        Direction::LeftToRight => s.height,
        Direction::TopToBottom => s.width,
    };
    let breadth: Vec<f64> = item_size.iter().map(|&s| across(s)).collect();
    let positions = coordinates(&layers, &up, &down, &breadth);

    let mut rank_start = Vec::with_capacity(rank_count);
    let mut rank_thickness = Vec::with_capacity(rank_count);
    let mut cursor = MARGIN;
    for layer in &layers {
        let thick = layer
            .iter()
            .map(|&i| along(item_size[i]))
            .fold(0.0, f64::max);
        rank_start.push(cursor);
        rank_thickness.push(thick);
        cursor += thick + RANK_SEP;
    }
    let length = if rank_count == 0 {
        2.0 * MARGIN
    } else {
        cursor - RANK_SEP + MARGIN
    };
    let min_across = (0..count)
        .map(|i| positions[i] - breadth[i] / 2.0)
        .fold(f64::INFINITY, f64::min);
    let max_across = (0..count)
        .map(|i| positions[i] + breadth[i] / 2.0)
        .fold(f64::NEG_INFINITY, f64::max);
    let shift = if count == 0 { 0.0 } else { MARGIN - min_across };
    let extent = if count == 0 {
        2.0 * MARGIN
    } else {
        max_across - min_across + 2.0 * MARGIN
    };
    // The box of item i: centred on its rank's middle line.
    let rect = |i: usize| -> Rect {
        let r = item_rank[i];
        let centre_along = rank_start[r] + rank_thickness[r] / 2.0;
        let centre_across = positions[i] + shift;
        let (a, c) = (along(item_size[i]), breadth[i]);
        match direction {
            Direction::LeftToRight => Rect {
                x: centre_along - a / 2.0,
                y: centre_across - c / 2.0,
                width: a,
                height: c,
            },
            Direction::TopToBottom => Rect {
                x: centre_across - c / 2.0,
                y: centre_along - a / 2.0,
                width: c,
                height: a,
            },
        }
    };
    let node_rects: Vec<Rect> = (0..n).map(rect).collect();
    let centre = |r: &Rect| Point {
        x: r.x + r.width / 2.0,
        y: r.y + r.height / 2.0,
    };
    // Where an edge leaves (`out`) or enters a box: the middle of the side facing the ranks.
    let side = |r: &Rect, out: bool| match (direction, out) {
        (Direction::LeftToRight, true) => Point {
            x: r.x + r.width,
            y: r.y + r.height / 2.0,
        },
        (Direction::LeftToRight, false) => Point {
            x: r.x,
            y: r.y + r.height / 2.0,
        },
        (Direction::TopToBottom, true) => Point {
            x: r.x + r.width / 2.0,
            y: r.y + r.height,
        },
        (Direction::TopToBottom, false) => Point {
            x: r.x + r.width / 2.0,
            y: r.y,
        },
    };
    let routes = edges
        .iter()
        .enumerate()
        .map(|(e, &(s, t, _))| {
            let mut points = vec![side(&node_rects[s], true)];
            let mut label = None;
            for &d in &chains[e] {
                let r = rect(d);
                if is_label[d] {
                    label = Some(r);
                }
                // A dummy is passed through along its rank's whole thickness, so that the
                // line does not cut the label boxes beside it.
                let c = centre(&r);
                let (rs, thick) = (rank_start[item_rank[d]], rank_thickness[item_rank[d]]);
                match direction {
                    Direction::LeftToRight => {
                        points.push(Point { x: rs, y: c.y });
                        points.push(Point {
                            x: rs + thick,
                            y: c.y,
                        });
                    }
                    Direction::TopToBottom => {
                        points.push(Point { x: c.x, y: rs });
                        points.push(Point {
                            x: c.x,
                            y: rs + thick,
                        });
                    }
                }
            }
            points.push(side(&node_rects[t], false));
            EdgeRoute { points, label }
        })
        .collect();
    let (width, height) = match direction {
        Direction::LeftToRight => (length, extent),
        Direction::TopToBottom => (extent, length),
    };
    Layout {
        width,
        height,
        nodes: node_rects,
        edges: routes,
        ranks,
    }
}

/// Per node, the longest path (in edges, times `step`) from a source. Kahn's order; nodes left
/// on a cycle get ranks after every other node's predecessors were seen. O(V + E).
fn longest_path_ranks(n: usize, edges: &[(usize, usize, Option<Size>)], step: usize) -> Vec<usize> {
    let mut indegree = vec![0usize; n];
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(s, t, _) in edges {
        if s != t {
            out[s].push(t);
            indegree[t] += 1;
        }
    }
    let mut rank = vec![0usize; n];
    let mut queue: std::collections::VecDeque<usize> =
        (0..n).filter(|&v| indegree[v] == 0).collect();
    let mut seen = vec![false; n];
    loop {
        while let Some(v) = queue.pop_front() {
            seen[v] = true;
            for &t in &out[v] {
                rank[t] = rank[t].max(rank[v] + step);
                indegree[t] -= 1;
                if indegree[t] == 0 {
                    queue.push_back(t);
                }
            }
        }
        // A cycle: release its first node and go on.
        match (0..n).find(|&v| !seen[v] && indegree[v] > 0) {
            Some(v) => {
                indegree[v] = 0;
                queue.push_back(v);
            }
            None => break,
        }
    }
    rank
}

/// Items per rank in order of first appearance in a breadth-first walk from the rank-0 items
/// (in index order). O(items + links).
fn initial_order(
    count: usize,
    item_rank: &[usize],
    rank_count: usize,
    down: &[Vec<usize>],
) -> Vec<Vec<usize>> {
    let mut layers = vec![Vec::new(); rank_count];
    let mut placed = vec![false; count];
    let mut queue = std::collections::VecDeque::new();
    for start in 0..count {
        if placed[start] {
            continue;
        }
        placed[start] = true;
        queue.push_back(start);
        while let Some(i) = queue.pop_front() {
            layers[item_rank[i]].push(i);
            for &j in &down[i] {
                if !placed[j] {
                    placed[j] = true;
                    queue.push_back(j);
                }
            }
        }
    }
    layers
}

/// Barycentre sweeps, keeping the order with the fewest crossings.
fn reduce_crossings(layers: &mut [Vec<usize>], up: &[Vec<usize>], down: &[Vec<usize>]) {
    let count = up.len();
    let mut position = vec![0usize; count];
    let index = |layers: &[Vec<usize>], position: &mut [usize]| {
        for layer in layers {
            for (p, &i) in layer.iter().enumerate() {
                position[i] = p;
            }
        }
    };
    index(layers, &mut position);
    let mut best = layers.to_vec();
    let mut best_crossings = crossings(layers, down, &position);
    for _ in 0..SWEEPS {
        for layer in layers.iter_mut().skip(1) {
            sort_by_barycentre(layer, up, &position);
            for (p, &i) in layer.iter().enumerate() {
                position[i] = p;
            }
        }
        for r in (0..layers.len().saturating_sub(1)).rev() {
            sort_by_barycentre(&mut layers[r], down, &position);
            for (p, &i) in layers[r].iter().enumerate() {
                position[i] = p;
            }
        }
        let c = crossings(layers, down, &position);
        if c < best_crossings {
            best_crossings = c;
            best = layers.to_vec();
        }
        if c == 0 {
            break;
        }
    }
    layers.clone_from_slice(&best);
}

/// Sorts a rank by the mean position of each item's neighbours (`adjacent`); items without
/// neighbours keep their place. Stable, so ties keep their order.
fn sort_by_barycentre(layer: &mut [usize], adjacent: &[Vec<usize>], position: &[usize]) {
    let mut keyed: Vec<(f64, usize)> = layer
        .iter()
        .enumerate()
        .map(|(p, &i)| {
            let n = &adjacent[i];
            let key = if n.is_empty() {
                p as f64
            } else {
                n.iter().map(|&j| position[j] as f64).sum::<f64>() / n.len() as f64
            };
            (key, i)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (slot, (_, i)) in layer.iter_mut().zip(keyed) {
        *slot = i;
    }
}

/// Edge crossings between every pair of adjacent ranks: inversions of the lower ends when the
/// links are sorted by their upper ends, counted with a Fenwick tree. O(E log V).
fn crossings(layers: &[Vec<usize>], down: &[Vec<usize>], position: &[usize]) -> u64 {
    let mut total = 0u64;
    for r in 0..layers.len().saturating_sub(1) {
        let mut pairs: Vec<(usize, usize)> = layers[r]
            .iter()
            .flat_map(|&i| down[i].iter().map(move |&j| (position[i], position[j])))
            .collect();
        pairs.sort_unstable();
        let size = layers[r + 1].len() + 1;
        let mut tree = vec![0u64; size + 1];
        for (seen, &(_, lower)) in pairs.iter().enumerate() {
            // Links seen so far that end strictly after `lower` cross this one.
            let mut at_most = 0u64;
            let mut k = lower + 1;
            while k > 0 {
                at_most += tree[k];
                k -= k & k.wrapping_neg();
            }
            total += seen as u64 - at_most;
            let mut k = lower + 1;
            while k <= size {
                tree[k] += 1;
                k += k & k.wrapping_neg();
            }
        }
    }
    total
}

/// Positions across the ranks (centres): packed first, then passes pulling each item toward
/// the mean of its neighbours in the rank before (down) or after (up), order and separation
/// kept. O(PASSES x (items + links)).
fn coordinates(
    layers: &[Vec<usize>],
    up: &[Vec<usize>],
    down: &[Vec<usize>],
    breadth: &[f64],
) -> Vec<f64> {
    let mut x = vec![0.0; breadth.len()];
    for layer in layers {
        let mut cursor = 0.0;
        for (k, &i) in layer.iter().enumerate() {
            if k > 0 {
                cursor += gap(breadth, layer[k - 1], i);
            }
            x[i] = cursor;
        }
    }
    for _ in 0..PASSES {
        for layer in layers.iter().skip(1) {
            place(layer, up, breadth, &mut x);
        }
        for r in (0..layers.len().saturating_sub(1)).rev() {
            place(&layers[r], down, breadth, &mut x);
        }
    }
    x
}

/// Centre-to-centre distance of two neighbours in a rank.
fn gap(breadth: &[f64], a: usize, b: usize) -> f64 {
    // Dummies without a label are lines: they need only half the separation.
    let sep = if breadth[a] == 0.0 || breadth[b] == 0.0 {
        NODE_SEP / 2.0
    } else {
        NODE_SEP
    };
    (breadth[a] + breadth[b]) / 2.0 + sep
}

/// Places one rank: the least-squares positions nearest each item's desired position (the mean
/// of its `adjacent` items, else where it is) with the order and gaps kept, by
/// pool-adjacent-violators on the positions minus the cumulative gaps.
fn place(layer: &[usize], adjacent: &[Vec<usize>], breadth: &[f64], x: &mut [f64]) {
    if layer.is_empty() {
        return;
    }
    let mut offset = Vec::with_capacity(layer.len());
    let mut cumulative = 0.0;
    for (k, &i) in layer.iter().enumerate() {
        if k > 0 {
            cumulative += gap(breadth, layer[k - 1], i);
        }
        offset.push(cumulative);
    }
    // Blocks of (sum of targets, count), merged while out of order.
    let mut blocks: Vec<(f64, f64, usize)> = Vec::new(); // (sum, weight, items)
    for (k, &i) in layer.iter().enumerate() {
        let n = &adjacent[i];
        let desired = if n.is_empty() {
            x[i]
        } else {
            n.iter().map(|&j| x[j]).sum::<f64>() / n.len() as f64
        };
        // Items with neighbours count more than free ones, which mostly keep their place.
        let weight = if n.is_empty() { 0.01 } else { n.len() as f64 };
        blocks.push(((desired - offset[k]) * weight, weight, 1));
        while blocks.len() > 1 {
            let last = blocks[blocks.len() - 1];
            let before = blocks[blocks.len() - 2];
            if before.0 / before.1 > last.0 / last.1 {
                blocks.pop();
                let merged = blocks.last_mut().expect("two blocks");
                merged.0 += last.0;
                merged.1 += last.1;
                merged.2 += last.2;
            } else {
                break;
            }
        }
    }
    let mut k = 0;
    for (sum, weight, items) in blocks {
        let value = sum / weight;
        for _ in 0..items {
            x[layer[k]] = value + offset[k];
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOX: Size = Size {
        width: 100.0,
        height: 40.0,
    };

    #[test]
    fn ranks_are_longest_paths() {
        // a -> b -> c and a -> c: c is two ranks down, not one.
        let l = lay_out(
            &[BOX; 3],
            &[(0, 1, None), (1, 2, None), (0, 2, None)],
            Direction::TopToBottom,
        );
        assert_eq!(l.ranks, [0, 1, 2]);
        assert!(l.nodes[0].y < l.nodes[1].y && l.nodes[1].y < l.nodes[2].y);
    }

    #[test]
    fn a_crossing_is_undone() {
        // Rank 0: 0, 1; rank 1: 2, 3 with 0 -> 3 and 1 -> 2: one crossing, swapped away.
        let mut layers = vec![vec![0, 1], vec![2, 3]];
        let down = vec![vec![3], vec![2], vec![], vec![]];
        let up = vec![vec![], vec![], vec![1], vec![0]];
        reduce_crossings(&mut layers, &up, &down);
        assert_eq!(layers, [vec![0, 1], vec![3, 2]]);
    }

    #[test]
    fn labels_get_ranks_of_their_own_and_never_overlap() {
        // Four sources into one sink: four labels in one rank, none overlapping another or a box.
        let label = Some(Size {
            width: 80.0,
            height: 14.0,
        });
        let edges: Vec<_> = (0..4).map(|s| (s, 4, label)).collect();
        for direction in [Direction::LeftToRight, Direction::TopToBottom] {
            let l = lay_out(&[BOX; 5], &edges, direction);
            assert_eq!(l.ranks, [0, 0, 0, 0, 2]);
            let mut boxes: Vec<Rect> = l.edges.iter().map(|e| e.label.expect("label")).collect();
            boxes.extend(&l.nodes);
            for (i, a) in boxes.iter().enumerate() {
                for b in &boxes[i + 1..] {
                    assert!(!a.intersects(b), "{a:?} {b:?}");
                }
                assert!(a.x >= 0.0 && a.y >= 0.0);
                assert!(a.x + a.width <= l.width && a.y + a.height <= l.height);
            }
        }
    }

    #[test]
    fn crossings_are_counted() {
        // Rank 0: 0, 1; rank 1: 2, 3; links 0 -> 3 and 1 -> 2 cross once.
        let layers = vec![vec![0, 1], vec![2, 3]];
        let down = vec![vec![3], vec![2], vec![], vec![]];
        let position = vec![0, 1, 0, 1];
        assert_eq!(crossings(&layers, &down, &position), 1);
        let down = vec![vec![2], vec![3], vec![], vec![]];
        assert_eq!(crossings(&layers, &down, &position), 0);
    }
}
