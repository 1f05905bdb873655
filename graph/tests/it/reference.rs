//! Property tests against deliberately naive reference models:
//!
//! (a) expansion: every (producer subtask, consumer subtask) pair of every edge, materialised
//!     from Flink's per-consumer formulas, against the grouped execution graph;
//! (b) regions: a whole-graph computation over those pairs (union-find over must-be-pipelined
//!     pairs, then petgraph's Tarjan SCC over all other pairs, as Flink 1.12 and
//!     `SchedulingPipelinedRegionComputeUtil` on a whole topology do), against
//!     `PipelinedRegions`, numbering included;
//! (c) region invariants that hold whatever the algorithm.

use std::collections::{BTreeMap, BTreeSet};

use conflux_graph::json::JobGraphJson;
use conflux_graph::{
    ExecutionGraph, ExecutionVertexIndex, IntermediateDataSetIndex, IntermediateResultPartitionId,
    JobEdgeIndex, JobVertexIndex, LogicalRegionIndex, PartitionIndex, PipelinedRegionIndex,
    PipelinedRegions, ResultPartitionType,
};
use petgraph::algo::{is_cyclic_directed, tarjan_scc};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::unionfind::UnionFind;
use proptest::prelude::*;
use proptest::test_runner::Config;

use crate::support::{build, edge, job, vertex};

/// Every partition type of the JSON format.
const TYPES: [&str; 7] = [
    "pipelined",
    "pipelined_bounded",
    "blocking",
    "hybrid_full",
    "hybrid_selective",
    "blocking_persistent",
    "pipelined_approximate",
];

/// One generated edge, between positions of a topological order (`from < to`).
#[derive(Clone, Debug)]
struct EdgeSpec {
    from: usize,
    to: usize,
    all_to_all: bool,
    partition_type: &'static str,
    data_set: Option<String>,
}

/// A generated job graph. Position `i` is vertex `v{i}`; edges go from lower to higher position,
/// and the vertices are listed in the JSON in the shuffled order `listing`, so the crate has to
/// sort them.
#[derive(Clone, Debug)]
struct GraphSpec {
    parallelism: Vec<u32>,
    listing: Vec<usize>,
    edges: Vec<EdgeSpec>,
}

fn name(position: usize) -> String {
    format!("v{position}")
}

fn u32_of(x: usize) -> u32 {
    u32::try_from(x).expect("fits u32")
}

fn usize_of(x: u32) -> usize {
    usize::try_from(x).expect("fits usize")
}

/// Random DAGs of 1..=`max_vertices` vertices of parallelism 1..=`max_parallelism`, up to 3n
/// edges (parallel edges allowed) with random pattern and type. About one edge in four tries to
/// share the data set of an earlier edge from the same source to another target (FLINK-28663):
/// it takes over that edge's pattern and type, and its target's parallelism is made equal where
/// no earlier sharing fixed it.
fn graph_spec(max_vertices: usize, max_parallelism: u32) -> impl Strategy<Value = GraphSpec> {
    (1..=max_vertices)
        .prop_flat_map(move |n| {
            (
                prop::collection::vec(1..=max_parallelism, n),
                Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
                prop::collection::vec(
                    (
                        0..n,
                        0..n,
                        any::<bool>(),
                        0..TYPES.len(),
                        prop::bool::weighted(0.25),
                    ),
                    0..=3 * n,
                ),
            )
        })
        .prop_map(|(mut parallelism, listing, raw)| {
            let mut edges: Vec<EdgeSpec> = Vec::new();
            let mut pinned = vec![false; parallelism.len()];
            for (a, b, all_to_all, t, share) in raw {
                if a == b {
                    continue;
                }
                let (from, to) = (a.min(b), a.max(b));
                let mut e = EdgeSpec {
                    from,
                    to,
                    all_to_all,
                    partition_type: TYPES[t],
                    data_set: None,
                };
                let sibling = edges.iter().position(|m| m.from == from && m.to != to);
                if let (true, Some(m)) = (share, sibling) {
                    let data_set = edges[m]
                        .data_set
                        .clone()
                        .unwrap_or_else(|| format!("ds{m}"));
                    // A target may consume a data set once.
                    let taken = edges
                        .iter()
                        .any(|x| x.to == to && x.data_set.as_deref() == Some(&data_set));
                    let sibling_to = edges[m].to;
                    let equal = parallelism[to] == parallelism[sibling_to];
                    if !taken && (equal || !pinned[to]) {
                        parallelism[to] = parallelism[sibling_to];
                        pinned[to] = true;
                        pinned[sibling_to] = true;
                        edges[m].data_set = Some(data_set.clone());
                        e.all_to_all = edges[m].all_to_all;
                        e.partition_type = edges[m].partition_type;
                        e.data_set = Some(data_set);
                    }
                }
                edges.push(e);
            }
            GraphSpec {
                parallelism,
                listing,
                edges,
            }
        })
}

impl GraphSpec {
    fn to_json(&self) -> JobGraphJson {
        job(
            self.listing
                .iter()
                .map(|&pos| vertex(&name(pos), self.parallelism[pos]))
                .collect(),
            self.edges
                .iter()
                .map(|e| {
                    let pattern = if e.all_to_all {
                        "all_to_all"
                    } else {
                        "pointwise"
                    };
                    let mut json = edge(&name(e.from), &name(e.to), pattern, e.partition_type);
                    json.data_set.clone_from(&e.data_set);
                    json
                })
                .collect(),
        )
    }
}

/// Partitions consumer subtask `i` of `U -> D` reads (Flink 1.14+, EdgeManagerBuildUtil): ALL_TO_ALL
/// all; POINTWISE `U >= D` `[floor(iU/D), floor((i+1)U/D))`; `U < D` the one partition
/// `floor(iU/D)`.
fn naive_reads(all_to_all: bool, u: u32, d: u32, i: u32) -> Vec<u32> {
    let (u64_u, u64_d, u64_i) = (u64::from(u), u64::from(d), u64::from(i));
    let at = |x: u64| u32::try_from(x).expect("fits u32");
    if all_to_all {
        (0..u).collect()
    } else if u >= d {
        (at(u64_i * u64_u / u64_d)..at((u64_i + 1) * u64_u / u64_d)).collect()
    } else {
        vec![at(u64_i * u64_u / u64_d)]
    }
}

/// The naive model of a generated graph: every (producer, consumer) subtask pair of every edge,
/// and the crate's dense indices of every vertex.
struct Model<'a> {
    spec: &'a GraphSpec,
    graph: ExecutionGraph,
    regions: PipelinedRegions,
    /// `pairs[k]`: `(partition, consumer subtask)` of edge `k`, by consumer then partition.
    pairs: Vec<Vec<(u32, u32)>>,
}

impl<'a> Model<'a> {
    fn new(spec: &'a GraphSpec) -> Model<'a> {
        let (graph, regions) = build(&spec.to_json());
        let pairs = spec
            .edges
            .iter()
            .map(|e| {
                let (u, d) = (spec.parallelism[e.from], spec.parallelism[e.to]);
                (0..d)
                    .flat_map(|i| {
                        naive_reads(e.all_to_all, u, d, i)
                            .into_iter()
                            .map(move |p| (p, i))
                    })
                    .collect()
            })
            .collect();
        Model {
            spec,
            graph,
            regions,
            pairs,
        }
    }

    fn job_vertex(&self, position: usize) -> JobVertexIndex {
        self.graph
            .job_graph()
            .vertex_index(&name(position))
            .expect("vertex exists")
    }

    /// Dense execution vertex index of subtask `subtask` of the vertex at `position`.
    fn global(&self, position: usize, subtask: u32) -> u32 {
        let range = self.graph.execution_vertices_of(self.job_vertex(position));
        assert!(subtask < range.end - range.start);
        range.start + subtask
    }

    fn reads(&self, k: usize, consumer: u32) -> Vec<u32> {
        self.pairs[k]
            .iter()
            .filter(|&&(_, i)| i == consumer)
            .map(|&(p, _)| p)
            .collect()
    }

    fn readers(&self, k: usize, partition: u32) -> Vec<u32> {
        self.pairs[k]
            .iter()
            .filter(|&&(p, _)| p == partition)
            .map(|&(_, i)| i)
            .collect()
    }

    /// Every pair as `(producer vertex, consumer vertex, must be pipelined)` in dense indices.
    fn global_pairs(&self) -> Vec<(u32, u32, bool)> {
        let mut out = Vec::new();
        for (k, e) in self.spec.edges.iter().enumerate() {
            let must = ResultPartitionType::parse(e.partition_type)
                .expect("known type")
                .must_be_pipelined_consumed();
            for &(p, i) in &self.pairs[k] {
                out.push((self.global(e.from, p), self.global(e.to, i), must));
            }
        }
        out
    }

    /// The crate's regions, in region order, each as its member set.
    fn crate_regions(&self) -> Vec<BTreeSet<u32>> {
        (0..self.regions.len())
            .map(|r| {
                self.regions
                    .members(PipelinedRegionIndex(u32_of(r)))
                    .map(|v| v.0)
                    .collect()
            })
            .collect()
    }
}

/// Groups items `0..keys.len()` by key, each group ordered, groups ordered by first member.
fn group_by_key<K: Ord + Copy>(keys: &[K]) -> Vec<BTreeSet<u32>> {
    let mut by_key: BTreeMap<K, BTreeSet<u32>> = BTreeMap::new();
    for (item, &key) in keys.iter().enumerate() {
        by_key.entry(key).or_default().insert(u32_of(item));
    }
    let mut groups: Vec<BTreeSet<u32>> = by_key.into_values().collect();
    groups.sort_by_key(|g| g.first().copied());
    groups
}

/// Whole-graph regions: union-find over `must` pairs of `0..n`, then the strongly connected
/// components of the graph of raw regions over all other pairs are merged. Groups are ordered
/// by first member.
fn whole_graph_regions(n: usize, pairs: &[(u32, u32, bool)]) -> Vec<BTreeSet<u32>> {
    let mut uf = UnionFind::<usize>::new(n);
    for &(a, b, must) in pairs {
        if must {
            uf.union(usize_of(a), usize_of(b));
        }
    }
    let raw = uf.into_labeling();
    let mut region_graph = DiGraph::<(), ()>::new();
    let mut node_of: BTreeMap<usize, NodeIndex> = BTreeMap::new();
    for &label in &raw {
        node_of
            .entry(label)
            .or_insert_with(|| region_graph.add_node(()));
    }
    for &(a, b, must) in pairs {
        let (ra, rb) = (raw[usize_of(a)], raw[usize_of(b)]);
        if !must && ra != rb {
            region_graph.add_edge(node_of[&ra], node_of[&rb], ());
        }
    }
    let mut component_of = vec![0usize; region_graph.node_count()];
    for (c, scc) in tarjan_scc(&region_graph).into_iter().enumerate() {
        for node in scc {
            component_of[node.index()] = c;
        }
    }
    let keys: Vec<usize> = raw
        .iter()
        .map(|label| component_of[node_of[label].index()])
        .collect();
    group_by_key(&keys)
}

/// (a) Every execution vertex consumes, per input in order, exactly the partitions the naive
/// pairs give; every group is consumed by exactly the consumers reading its partitions; the
/// partition side agrees; groups are numbered by consumer in topological order, then input.
fn check_expansion(spec: &GraphSpec) {
    let model = Model::new(spec);
    let graph = &model.graph;
    let job_graph = graph.job_graph();
    let n = spec.parallelism.len();

    let total: u32 = spec.parallelism.iter().sum();
    assert_eq!(graph.num_execution_vertices(), total);

    // Consumer side.
    let mut all_groups = BTreeSet::new();
    for pos in 0..n {
        let inputs: Vec<usize> = (0..spec.edges.len())
            .filter(|&k| spec.edges[k].to == pos)
            .collect();
        for i in 0..spec.parallelism[pos] {
            let v = ExecutionVertexIndex(model.global(pos, i));
            let groups: Vec<_> = graph
                .consumed_partition_groups(v)
                .map(|id| graph.consumed_partition_group(id))
                .collect();
            assert_eq!(groups.len(), inputs.len(), "inputs of {}#{i}", name(pos));
            for (group, &k) in groups.iter().zip(&inputs) {
                let e = &spec.edges[k];
                let what = format!("{}#{i}, input edge {k}", name(pos));
                let edge_index = JobEdgeIndex(u32_of(k));
                assert_eq!(group.edge, edge_index, "{what}: edge");
                assert_eq!(group.result, job_graph.edge(edge_index).data_set, "{what}");
                assert_eq!(group.result_partition_type.as_str(), e.partition_type);
                assert_eq!(
                    group.partitions.clone().collect::<Vec<_>>(),
                    model.reads(k, i),
                    "{what}: partitions"
                );
                // The group is exactly "these partitions, read by exactly these consumers".
                let cvg = graph.consumer_vertex_group(group.id.consumer_vertex_group());
                assert_eq!(cvg.edge, edge_index, "{what}: paired consumer group edge");
                assert_eq!(cvg.job_vertex, model.job_vertex(pos));
                assert!(cvg.subtasks.contains(&i), "{what}: in its consumer group");
                assert_eq!(usize_of(group.num_consumers), cvg.subtasks.len(), "{what}");
                for p in group.partitions.clone() {
                    assert_eq!(
                        model.readers(k, p),
                        cvg.subtasks.clone().collect::<Vec<_>>(),
                        "{what}: readers of partition {p}"
                    );
                }
                for c in cvg.subtasks.clone() {
                    assert_eq!(
                        model.reads(k, c),
                        group.partitions.clone().collect::<Vec<_>>(),
                        "{what}: partitions of co-consumer {c}"
                    );
                }
                all_groups.insert(group.id.0);
            }
        }
    }
    // Every group is consumed by someone, and there are no others.
    assert_eq!(
        all_groups,
        (0..graph.num_groups()).collect::<BTreeSet<_>>(),
        "group ids"
    );
    let expected_groups: u32 = spec
        .edges
        .iter()
        .map(|e| {
            if e.all_to_all {
                1
            } else {
                spec.parallelism[e.from].min(spec.parallelism[e.to])
            }
        })
        .sum();
    assert_eq!(graph.num_groups(), expected_groups);

    // Group numbering: consumers in topological order, inputs in order, contiguous per edge.
    let mut next = 0;
    for j in job_graph.vertex_indices() {
        for &e in job_graph.inputs(j) {
            let c = graph.connection(e);
            assert_eq!(c.first_group, next, "first group of edge {}", e.0);
            next += c.num_groups;
        }
    }

    // Partition side: per data set, per partition, one consumer group per consumer edge, in
    // edge order, holding exactly the readers.
    let mut partitions = BTreeSet::new();
    for (d, data_set) in job_graph.data_sets().iter().enumerate() {
        let result = IntermediateDataSetIndex(u32_of(d));
        let consumer_edges: Vec<usize> = (0..spec.edges.len())
            .filter(|&k| job_graph.edge(JobEdgeIndex(u32_of(k))).data_set == result)
            .collect();
        assert_eq!(
            data_set
                .consumers
                .iter()
                .map(|e| e.idx())
                .collect::<Vec<_>>(),
            consumer_edges
        );
        let producer = spec.edges[consumer_edges[0]].from;
        assert_eq!(data_set.producer, model.job_vertex(producer));
        for p in 0..spec.parallelism[producer] {
            let partition = IntermediateResultPartitionId {
                result,
                partition: p,
            };
            let producer_vertex = model.global(producer, p);
            assert_eq!(graph.producer_of(partition).0, producer_vertex);
            assert!(graph
                .produced_partitions(ExecutionVertexIndex(producer_vertex))
                .any(|x| x == partition));
            assert!(partitions.insert(graph.partition_index(partition)));
            let cvgs: Vec<_> = graph
                .consumer_vertex_groups(partition)
                .map(|id| graph.consumer_vertex_group(id))
                .collect();
            assert_eq!(cvgs.len(), consumer_edges.len());
            for (cvg, &k) in cvgs.iter().zip(&consumer_edges) {
                let what = format!("partition {p} of data set {}, edge {k}", data_set.id);
                assert_eq!(cvg.edge.idx(), k, "{what}");
                assert_eq!(
                    cvg.subtasks.clone().collect::<Vec<_>>(),
                    model.readers(k, p),
                    "{what}: consumers"
                );
                let paired = graph.consumed_partition_group(cvg.id.consumed_partition_group());
                assert!(paired.partitions.contains(&p), "{what}: paired group");
            }
        }
    }
    assert_eq!(
        partitions,
        (0..graph.num_partitions())
            .map(PartitionIndex)
            .collect::<BTreeSet<_>>()
    );
}

/// (b) The crate's regions are the whole-graph regions, numbered by first vertex.
fn check_regions(spec: &GraphSpec) {
    let model = Model::new(spec);
    let n = usize_of(model.graph.num_execution_vertices());
    let expected = whole_graph_regions(n, &model.global_pairs());
    let actual = model.crate_regions();
    assert_eq!(
        actual.iter().cloned().collect::<BTreeSet<_>>(),
        expected.iter().cloned().collect::<BTreeSet<_>>(),
        "regions as sets"
    );
    assert_eq!(actual, expected, "regions numbered by first vertex");

    // Logical regions: the same computation over job vertices and job edges.
    let job_graph = model.graph.job_graph();
    let job_pairs: Vec<(u32, u32, bool)> = job_graph
        .edges()
        .iter()
        .map(|e| {
            (
                e.source.0,
                e.target.0,
                e.result_partition_type.must_be_pipelined_consumed(),
            )
        })
        .collect();
    let expected_logical = whole_graph_regions(job_graph.vertices().len(), &job_pairs);
    let logical = model.regions.logical();
    let actual_logical: Vec<BTreeSet<u32>> = (0..logical.len())
        .map(|r| {
            logical
                .members(LogicalRegionIndex(u32_of(r)))
                .map(|v| v.0)
                .collect()
        })
        .collect();
    assert_eq!(actual_logical, expected_logical, "logical regions");
}

/// (c) Invariants: a partition of the vertices; must-be-pipelined pairs inside one region; an
/// acyclic region dependency graph; each region inside one logical region; numbering by first
/// member.
fn check_region_invariants(spec: &GraphSpec) {
    let model = Model::new(spec);
    let regions = &model.regions;
    let graph = &model.graph;
    let n = usize_of(graph.num_execution_vertices());

    let mut seen = vec![0u32; n];
    let mut previous_first = None;
    for (r, members) in model.crate_regions().iter().enumerate() {
        let region = PipelinedRegionIndex(u32_of(r));
        assert!(!members.is_empty(), "region {r} is empty");
        let listed: Vec<u32> = regions.members(region).map(|v| v.0).collect();
        assert!(listed.windows(2).all(|w| w[0] < w[1]), "members ascending");
        assert!(
            previous_first < members.first().copied(),
            "numbered by first"
        );
        previous_first = members.first().copied();
        let logical = regions.logical().region_of(
            graph
                .execution_vertex_id(ExecutionVertexIndex(listed[0]))
                .job_vertex,
        );
        for &v in members {
            seen[usize_of(v)] += 1;
            assert_eq!(regions.region_of(ExecutionVertexIndex(v)), region);
            let job_vertex = graph
                .execution_vertex_id(ExecutionVertexIndex(v))
                .job_vertex;
            assert_eq!(
                regions.logical().region_of(job_vertex),
                logical,
                "one logical region"
            );
        }
    }
    assert!(
        seen.iter().all(|&c| c == 1),
        "every vertex in exactly one region"
    );
    assert_eq!(regions.sizes().map(usize_of).sum::<usize>(), n);

    let mut dependencies = DiGraph::<(), ()>::new();
    let nodes: Vec<NodeIndex> = (0..regions.len())
        .map(|_| dependencies.add_node(()))
        .collect();
    for (a, b, must) in model.global_pairs() {
        let (ra, rb) = (
            regions.region_of(ExecutionVertexIndex(a)),
            regions.region_of(ExecutionVertexIndex(b)),
        );
        if must {
            assert_eq!(ra, rb, "pipelined pair {a} -> {b} in one region");
        } else if ra != rb {
            dependencies.add_edge(nodes[ra.idx()], nodes[rb.idx()], ());
        }
    }
    assert!(
        !is_cyclic_directed(&dependencies),
        "region dependencies are acyclic"
    );
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn expansion_matches_naive_pairs(spec in graph_spec(6, 6)) {
        check_expansion(&spec);
    }

    #[test]
    fn regions_match_whole_graph_scc(spec in graph_spec(6, 6)) {
        check_regions(&spec);
    }

    #[test]
    fn region_invariants_hold(spec in graph_spec(6, 6)) {
        check_region_invariants(&spec);
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// Fewer vertices, larger and irregular parallelisms (e.g. 11 -> 29).
    #[test]
    fn larger_parallelism_matches_references(spec in graph_spec(4, 40)) {
        check_expansion(&spec);
        check_regions(&spec);
        check_region_invariants(&spec);
    }
}

/// Flink 1.12's per-edge POINTWISE logic (`ExecutionVertex.connectPointwise`), float factors
/// and all: `(start, end)` of the partitions consumer `i` reads.
fn flink_1_12_pointwise(u: u32, d: u32, i: u32) -> (u32, u32) {
    // Flink computes in `float` and truncates with `(int)`, as these casts do for the small,
    // non-negative values here.
    #[allow(clippy::cast_precision_loss)]
    let float = |x: u32| x as f32;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let int = |x: f32| x as u32;
    if u == d {
        (i, i + 1)
    } else if u < d {
        let p = if d.is_multiple_of(u) {
            i / (d / u)
        } else {
            int(float(i) / (float(d) / float(u)))
        };
        (p, p + 1)
    } else if u.is_multiple_of(d) {
        (i * (u / d), (i + 1) * (u / d))
    } else {
        let factor = float(u) / float(d);
        let end = if i == d - 1 {
            u
        } else {
            int(float(i + 1) * factor)
        };
        (int(float(i) * factor), end)
    }
}

/// FLINK-21326 replaced the 1.12 per-edge logic by the grouped one and its tests pinned equal
/// results on small parallelisms; the crate agrees with 1.12 for every U, D <= 12. Above that
/// 1.12's float factor rounds down across an integer (14 -> 16, consumer 8: 8 / (16/14 as f32)
/// is 6.9999995, so partition 6), where 1.14+ and the crate give the exact floor(8*14/16) = 7.
#[test]
fn pointwise_agrees_with_flink_1_12_for_small_parallelism() {
    for u in 1..=12 {
        for d in 1..=12 {
            let (graph, _) = build(&job(
                vec![vertex("U", u), vertex("D", d)],
                vec![edge("U", "D", "pointwise", "blocking")],
            ));
            let start = graph.execution_vertices_of(JobVertexIndex(1)).start;
            for i in 0..d {
                let id = graph
                    .consumed_partition_groups(ExecutionVertexIndex(start + i))
                    .next()
                    .expect("one input");
                let parts = graph.consumed_partition_group(id).partitions;
                let (s, e) = flink_1_12_pointwise(u, d, i);
                assert_eq!(parts, s..e, "{u}->{d}: consumer {i}");
            }
        }
    }
    assert_eq!(flink_1_12_pointwise(14, 16, 8), (6, 7));
    assert_eq!(naive_reads(false, 14, 16, 8), vec![7]);
    let (graph, _) = build(&job(
        vec![vertex("U", 14), vertex("D", 16)],
        vec![edge("U", "D", "pointwise", "blocking")],
    ));
    let start = graph.execution_vertices_of(JobVertexIndex(1)).start;
    let id = graph
        .consumed_partition_groups(ExecutionVertexIndex(start + 8))
        .next()
        .expect("one input");
    assert_eq!(graph.consumed_partition_group(id).partitions, 7..8);
}

/// The region of each `(vertex id, subtask)`, as sets of names, ordered by first member.
fn named_regions(graph: &ExecutionGraph, regions: &PipelinedRegions) -> Vec<BTreeSet<String>> {
    (0..regions.len())
        .map(|r| {
            regions
                .members(PipelinedRegionIndex(u32_of(r)))
                .map(|v| graph.execution_vertex_name(v))
                .collect()
        })
        .collect()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|&s| s.to_owned()).collect()
}

/// Regions that depend on each other across logical regions: A->B blocking, A->C pipelined, B->D blocking, C->D pipelined.
/// Flink 1.14-1.20 gives {A0,C0,D0} and {B0}, which wait on each other forever; Conflux merges
/// the cycle between logical regions and gives one region, as the whole-graph computation does.
#[test]
fn cycle_across_logical_regions_is_one_region() {
    for boundary in ["blocking", "hybrid_full", "hybrid_selective"] {
        for p in [1, 2] {
            let (graph, regions) = build(&job(
                vec![
                    vertex("A", p),
                    vertex("B", p),
                    vertex("C", p),
                    vertex("D", p),
                ],
                vec![
                    edge("A", "B", "pointwise", boundary),
                    edge("A", "C", "pointwise", "pipelined"),
                    edge("B", "D", "pointwise", boundary),
                    edge("C", "D", "pointwise", "pipelined"),
                ],
            ));
            let expected: Vec<BTreeSet<String>> = if p == 1 {
                vec![names(&["A#0", "B#0", "C#0", "D#0"])]
            } else {
                vec![
                    names(&["A#0", "B#0", "C#0", "D#0"]),
                    names(&["A#1", "B#1", "C#1", "D#1"]),
                ]
            };
            assert_eq!(
                named_regions(&graph, &regions),
                expected,
                "{boundary}, parallelism {p}"
            );
            assert_eq!(regions.logical().len(), 1, "{boundary}: one logical region");
        }
    }
}
