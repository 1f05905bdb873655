//! Plan edits, refusal reasons, versions and diffs.

use conflux_graph::json::JobGraphJson;
use conflux_graph::JobGraph;
use conflux_planner::versions::total_channels;
use conflux_planner::{diff, EdgeRef, Edit, PlanError, TapSide, VersionedPlan};

use crate::plan;

/// A streaming job: src -(REBALANCE)-> map -(HASH)-> agg -(FORWARD)-> sink; agg has keyed state.
fn job() -> JobGraphJson {
    plan(
        r#"{"name": "job", "job_type": "streaming", "vertices": [
          {"id": "src", "parallelism": 4},
          {"id": "map", "parallelism": 2, "max_parallelism": 8, "operators": [{"uid": "m1", "name": "parse"}, {"uid": "m2", "name": "filter"}]},
          {"id": "agg", "parallelism": 2, "operators": [{"uid": "agg", "name": "count", "state": [{"name": "acc", "kind": "value", "key_type": "STRING", "value_type": "BIGINT"}]}]},
          {"id": "sink", "parallelism": 2, "co_location_group": "c"},
          {"id": "sink2", "parallelism": 2, "co_location_group": "c"}],
         "edges": [
          {"source": "src", "target": "map", "distribution_pattern": "all_to_all", "result_partition_type": "pipelined_bounded", "ship_strategy": "REBALANCE"},
          {"source": "map", "target": "agg", "distribution_pattern": "all_to_all", "result_partition_type": "pipelined_bounded", "ship_strategy": "HASH[word]"},
          {"source": "agg", "target": "sink", "distribution_pattern": "pointwise", "result_partition_type": "pipelined_bounded", "ship_strategy": "FORWARD"},
          {"source": "sink", "target": "sink2", "distribution_pattern": "pointwise", "result_partition_type": "pipelined_bounded", "ship_strategy": "FORWARD"}]}"#,
    )
}

/// Applies `edit` and expects a refusal whose message contains every fragment.
fn refused(edit: Edit, fragments: &[&str]) {
    let e = edit.apply(&job()).expect_err("refused");
    let text = e.to_string();
    for f in fragments {
        assert!(text.contains(f), "'{text}' lacks '{f}'");
    }
}

#[test]
fn refusal_reasons() {
    refused(
        Edit::SetPartitioner {
            edge: EdgeRef::Index(1),
            partitioner: "REBALANCE".into(),
        },
        &["set_partitioner on edge 1 refused", "HASH[word]", "keyed"],
    );
    refused(
        Edit::SetPartitioner {
            edge: EdgeRef::Index(2),
            partitioner: "RESCALE".into(),
        },
        &["the edge is FORWARD", "only REBALANCE and RESCALE"],
    );
    refused(
        Edit::SetPartitioner {
            edge: EdgeRef::Index(0),
            partitioner: "BROADCAST".into(),
        },
        &["'BROADCAST' is not REBALANCE or RESCALE"],
    );
    refused(
        Edit::SetPartitioner {
            edge: EdgeRef::Index(0),
            partitioner: "REBALANCE".into(),
        },
        &["already REBALANCE"],
    );
    refused(
        Edit::SetParallelism {
            vertex: "map".into(),
            parallelism: 9,
        },
        &["parallelism 9 is above its max parallelism 8"],
    );
    refused(
        Edit::SetParallelism {
            vertex: "src".into(),
            parallelism: 129,
        },
        &["above its max parallelism (Flink's default", "128"],
    );
    refused(
        Edit::SetParallelism {
            vertex: "src".into(),
            parallelism: 0,
        },
        &["at least 1"],
    );
    // agg -> sink -> sink2 are FORWARD: one forward group, one parallelism (Flink refuses a
    // change of parallelism across a FORWARD edge); the edit sets the whole group, and refuses
    // a parallelism above a member's max parallelism, naming it.
    let edited = Edit::SetParallelism {
        vertex: "agg".into(),
        parallelism: 3,
    }
    .apply(&job())
    .expect("applies");
    let parallelism = |id: &str| {
        edited
            .vertices
            .iter()
            .find(|v| v.id == id)
            .map(|v| v.parallelism)
    };
    assert_eq!(
        ["src", "map", "agg", "sink", "sink2"].map(parallelism),
        [Some(4), Some(2), Some(3), Some(3), Some(3)]
    );
    let mut capped = job();
    capped.vertices[4].max_parallelism = Some(2);
    let e = Edit::SetParallelism {
        vertex: "agg".into(),
        parallelism: 3,
    }
    .apply(&capped)
    .expect_err("above sink2's max");
    assert!(
        e.to_string()
            .contains("parallelism 3 is above the max parallelism of 'sink2' in its forward group"),
        "{e}"
    );
    refused(
        Edit::SetSlotSharingGroup {
            vertex: "sink".into(),
            group: "side".into(),
        },
        &["co-located", "sink2"],
    );
    refused(
        Edit::Chain {
            edge: EdgeRef::Index(1),
        },
        &["only a FORWARD edge can be chained"],
    );
    refused(
        Edit::Unchain {
            vertex: "agg".into(),
            at: 1,
            new_vertex: None,
        },
        &["only a chain of two or more can be split"],
    );
    refused(
        Edit::SetStateTtl {
            vertex: "agg".into(),
            operator: "agg".into(),
            state: "acc".into(),
            ttl_ms: Some(0),
        },
        &["at least 1 ms"],
    );
    refused(
        Edit::AddTap {
            vertex: "src".into(),
            side: TapSide::Input,
            name: None,
        },
        &["source", "no inputs"],
    );
    // Unknown names are errors of their own kind.
    assert!(matches!(
        Edit::SetParallelism { vertex: "nope".into(), parallelism: 2 }.apply(&job()),
        Err(PlanError::UnknownVertex(v)) if v == "nope"
    ));
    assert!(matches!(
        Edit::Chain {
            edge: EdgeRef::Endpoints {
                source: "src".into(),
                target: "agg".into()
            }
        }
        .apply(&job()),
        Err(PlanError::UnknownEdge { .. })
    ));
    assert!(matches!(
        Edit::SetStateTtl {
            vertex: "agg".into(),
            operator: "agg".into(),
            state: "nope".into(),
            ttl_ms: None
        }
        .apply(&job()),
        Err(PlanError::UnknownState { .. })
    ));
}

#[test]
fn accepted_edits_give_valid_plans() {
    let j = job();
    let rescaled = Edit::SetPartitioner {
        edge: EdgeRef::Endpoints {
            source: "src".into(),
            target: "map".into(),
        },
        partitioner: "rescale".into(),
    }
    .apply(&j)
    .expect("rebalance -> rescale");
    assert_eq!(rescaled.edges[0].distribution_pattern, "pointwise");
    assert_eq!(total_channels(&j) - total_channels(&rescaled), 8 - 4);

    let unchained = Edit::Unchain {
        vertex: "map".into(),
        at: 1,
        new_vertex: None,
    }
    .apply(&j)
    .expect("unchain");
    assert!(unchained.vertices.iter().any(|v| v.id == "map-1"));
    assert!(unchained
        .edges
        .iter()
        .any(|e| e.source == "map-1" && e.target == "agg"));
    let rechained = Edit::Chain {
        edge: EdgeRef::Endpoints {
            source: "map".into(),
            target: "map-1".into(),
        },
    }
    .apply(&unchained)
    .expect("chain");
    assert_eq!(rechained.vertices.len(), j.vertices.len());
    assert!(
        diff(&j, &rechained).is_empty(),
        "{:?}",
        diff(&j, &rechained)
    );

    let tapped = Edit::AddTap {
        vertex: "agg".into(),
        side: TapSide::Input,
        name: None,
    }
    .apply(&j)
    .expect("tap input");
    let tap = tapped
        .edges
        .iter()
        .find(|e| e.target == "tap-agg-input")
        .expect("tap edge");
    assert_eq!(tap.source, "map");
    assert_eq!(tap.ship_strategy.as_deref(), Some("HASH[word]"));
    let tapped = Edit::AddTap {
        vertex: "agg".into(),
        side: TapSide::Output,
        name: Some("debug".into()),
    }
    .apply(&tapped)
    .expect("tap output");
    JobGraph::from_json(&tapped).expect("valid");
    assert!(tapped
        .edges
        .iter()
        .any(|e| e.source == "agg" && e.target == "debug"));
}

/// Edits keep a vertex's task (`invokable`, `config`); chaining a vertex that names a task
/// into another is refused (a vertex runs one task).
#[test]
fn edits_keep_tasks() {
    let mut j = job();
    j.vertices[1].invokable = Some("wordcount-source".to_owned());
    j.vertices[1]
        .config
        .insert("seed".to_owned(), "7".to_owned());
    j.vertices[2].invokable = Some("wordcount-count".to_owned());
    let task = |p: &JobGraphJson, id: &str| {
        let v = p.vertices.iter().find(|v| v.id == id).expect("vertex");
        (v.invokable.clone(), v.config.get("seed").cloned())
    };
    let edits = [
        Edit::SetParallelism {
            vertex: "map".into(),
            parallelism: 3,
        },
        Edit::AddTap {
            vertex: "map".into(),
            side: TapSide::Output,
            name: None,
        },
        Edit::Unchain {
            vertex: "map".into(),
            at: 1,
            new_vertex: None,
        },
    ];
    for edit in edits {
        let edited = edit.apply(&j).expect("accepted");
        JobGraph::from_json(&edited).expect("valid");
        assert_eq!(
            task(&edited, "map"),
            (Some("wordcount-source".to_owned()), Some("7".to_owned())),
            "{edit:?}"
        );
        assert_eq!(
            task(&edited, "agg"),
            (Some("wordcount-count".to_owned()), None)
        );
    }
    let chain = Edit::Chain {
        edge: EdgeRef::Endpoints {
            source: "sink".into(),
            target: "sink2".into(),
        },
    };
    chain.apply(&j).expect("sink2 names no task");
    j.vertices[4].config.insert("k".to_owned(), "v".to_owned());
    let e = chain.apply(&j).expect_err("refused");
    assert!(e.to_string().contains("'sink2' names a task"), "{e}");
}

#[test]
fn versions_and_diff() {
    let mut p = VersionedPlan::new(job()).expect("valid");
    p.apply(
        Edit::SetParallelism {
            vertex: "map".into(),
            parallelism: 8,
        },
        None,
    )
    .expect("v2");
    p.apply(
        Edit::SetStateTtl {
            vertex: "agg".into(),
            operator: "count".into(),
            state: "acc".into(),
            ttl_ms: Some(3_600_000),
        },
        Some(1),
    )
    .expect("v3 from v1");
    assert_eq!(p.latest().number, 3);
    assert_eq!(p.latest().parent, Some(1));
    assert!(matches!(
        p.get(4),
        Err(PlanError::UnknownVersion {
            version: 4,
            latest: 3
        })
    ));
    let d = diff(&p.get(1).expect("v1").plan, &p.get(2).expect("v2").plan);
    assert_eq!(d.vertices_changed.len(), 1);
    assert_eq!(d.vertices_changed[0].id, "map");
    assert_eq!(d.vertices_changed[0].fields[0].field, "parallelism");
    assert_eq!(d.channels, (16, 52));
    let d = diff(&p.get(1).expect("v1").plan, &p.get(3).expect("v3").plan);
    assert_eq!(
        d.vertices_changed[0].fields[0].field,
        "operators[agg].state[acc].ttl_ms"
    );
    // A refused edit adds no version.
    assert!(p
        .apply(
            Edit::SetParallelism {
                vertex: "map".into(),
                parallelism: 100
            },
            None
        )
        .is_err());
    assert_eq!(p.versions().len(), 3);
}

#[test]
fn edits_read_and_write_json() {
    let e: Edit = serde_json::from_str(
        r#"{"kind": "set_partitioner", "edge": {"source": "a", "target": "b"}, "partitioner": "RESCALE"}"#,
    )
    .expect("edit json");
    assert_eq!(
        e,
        Edit::SetPartitioner {
            edge: EdgeRef::Endpoints {
                source: "a".into(),
                target: "b".into()
            },
            partitioner: "RESCALE".into()
        }
    );
    let e: Edit = serde_json::from_str(r#"{"kind": "chain", "edge": 3}"#).expect("edit json");
    assert_eq!(
        e,
        Edit::Chain {
            edge: EdgeRef::Index(3)
        }
    );
    assert!(serde_json::from_str::<Edit>(r#"{"kind": "chain", "edge": 3, "extra": 1}"#).is_err());
}

/// Parallelism edits of a Flink plan as Flink's `pipeline.jobvertex-parallelism-overrides`:
/// vertices by JobVertexID in plan order with their last value, named by id or Flink name;
/// other edits and vertices without a JobVertexID are refused naming them.
#[test]
fn parallelism_edits_become_flink_overrides() {
    use conflux_planner::{
        edit::is_flink_vertex_id, flink_parallelism_overrides, FLINK_PARALLELISM_OVERRIDES,
    };
    let q5 = crate::load_fixture(&crate::flink_fixture("tpch-q5.plan.json"), None);
    let set = |vertex: &str, parallelism| Edit::SetParallelism {
        vertex: vertex.to_owned(),
        parallelism,
    };
    let edits = [
        set("a0ee7b14d617ba4d8109c408f52753c7", 4),
        set("[35]:Sort(orderBy=[revenue DESC])", 2),
        set("a0ee7b14d617ba4d8109c408f52753c7", 6),
    ];
    let o = flink_parallelism_overrides(&q5, &edits).expect("overrides");
    assert_eq!(
        o.overrides,
        [
            ("23149c2f4012e830eebb47b5587a5f2f".to_owned(), 2),
            ("a0ee7b14d617ba4d8109c408f52753c7".to_owned(), 6)
        ]
    );
    assert_eq!(
        o.value(),
        "23149c2f4012e830eebb47b5587a5f2f:2,a0ee7b14d617ba4d8109c408f52753c7:6"
    );
    assert_eq!(
        FLINK_PARALLELISM_OVERRIDES,
        "pipeline.jobvertex-parallelism-overrides"
    );

    let mixed = [
        set("a0ee7b14d617ba4d8109c408f52753c7", 4),
        Edit::SetPartitioner {
            edge: EdgeRef::Index(0),
            partitioner: "RESCALE".into(),
        },
        Edit::Chain {
            edge: EdgeRef::Index(3),
        },
    ];
    assert_eq!(
        flink_parallelism_overrides(&q5, &mixed)
            .unwrap_err()
            .to_string(),
        "emitting pipeline.jobvertex-parallelism-overrides refused: set_partitioner on edge 0, \
         chain on edge 3 cannot be expressed: the option sets parallelism only"
    );
    assert_eq!(
        flink_parallelism_overrides(&job(), &[set("map", 3), set("src", 3)])
            .unwrap_err()
            .to_string(),
        "emitting pipeline.jobvertex-parallelism-overrides refused: vertices 'map', 'src' have \
         no Flink JobVertexID (32 hex digits); the option names vertices by it, so the plan \
         must be Flink's JSON plan or an edit of one"
    );
    // Each edit is still validated: above the max parallelism is refused as by `apply`.
    let e = flink_parallelism_overrides(&q5, &[set("a0ee7b14d617ba4d8109c408f52753c7", 200)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("parallelism 200 is above"), "{e}");
    assert!(is_flink_vertex_id("23149c2f4012e830eebb47b5587a5f2f"));
    assert!(!is_flink_vertex_id("23149c2f4012e830eebb47b5587a5f2"));
    assert!(!is_flink_vertex_id("23149c2f4012e830eebb47b5587a5f2g"));
}
