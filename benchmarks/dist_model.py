"""What the partitioned design does at many hosts (issue 45's "64 hosts,
IGB-full, on paper"): a model of the messages, bytes and memory of
``FusedDistNeighborLoader`` fitted to a measured run, projected to a graph
and a host count that cannot be run here.

    python benchmarks/dist_model.py \\
        --measured benchmarks/results/h200x2/dist_throughput_papers100m_scale0.02.csv \\
        --out benchmarks/results/model/dist_model_igb_full.csv

**Counts** (exact, from the code: docs/multi_gpu.md "Messages per hop").
A batch of ``L`` hops over ``P`` hash parts, fan-out ``k_h >= 0`` at hop
``h``, frontier ``f_h`` nodes at hop ``h`` (``f_0``: the seeds), ``d_h``
draws (sampled edges) at hop ``h``, ``n`` nodes in all, ``F`` features of
``s`` bytes and an int64 label: ``3 L + 4`` all-to-alls; a rank sends (by
symmetry of the hash parts, what it serves others equals what they serve
it)

    bytes = (L + 1) 8 (P - 1) + r sum_h (16 + 8 (1 + 2 k_h)) f_h
            + 8 (P - 1) + r n (8 + F s + 8),         r = (P - 1) / P

(sizes 8 bytes a peer; a request 16 bytes and its reply, padded to the
fan-out, 8 (1 + 2 k_h); an id 8, a row ``F s``, a label 8). A hop of
fan-out -1 takes one exchange more and ``24 f_h + 16 d_h`` bytes (its
replies unpadded), as every hop did before the replies were padded (``4 L
+ 4`` all-to-alls): a measured run whose exchange count says it ran that
protocol is checked against it. ``f_h``, ``d_h``, ``n`` are those of the
measured run's batches: the same graph, seeds, fan-out and batch size
sampled by ``FusedNeighborLoader`` here on the CPU (a partitioned batch is
the single-process batch), so the bytes the model predicts for the
measured ``P`` are checked against the bytes the run counted.

**Memory per rank**: features ``N F s / P``, labels ``8 N / P``, owned ids
``8 N / P``, CSC ``8 (N / P + 1) + 16 E / P``, the node -> part map ``8 N``
(every rank holds the whole map), and a cache of hot rows if asked.

**Time** (the part that is a model, not a count): what the partitioned
loader adds to a step beyond a single-GPU loader's (``loader_excess_ms``):
the measured run's excess of the partitioned step over the replicated one
(the sampler's per-hop host work, which depends on the batch, not on ``P``;
taken as it was measured, 128 features), plus ``3 L + 4`` all-to-all
latencies and the bytes over the link, at a latency and a bandwidth given
as assumptions for the projected cluster (the measured run's NVLink is not
an InfiniBand fabric). The model's own step on the projected graph is not
modelled.

Projection: ``--graph-nodes``, ``--graph-edges``, ``--features`` of the
target graph (IGB-full by default: 269,346,174 nodes, 3,995,777,033 edges,
1024 float32 features), batch counts as measured (the fan-out bounds them;
IGB-full's mean degree, 14.8, is papers100M-like's 14.5), for each of
``--hosts``. Rows: ``kind`` = ``measured`` (the run's counters),
``model`` (the model at the measured ``P``), ``projection``.
"""
import argparse
import csv
import os
import os.path as osp
import sys


HERE = osp.dirname(osp.abspath(__file__))
sys.path.insert(0, osp.dirname(HERE))

IGB_FULL = dict(nodes=269_346_174, edges=3_995_777_033, features=1024)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--measured', required=True,
                   help='a dist_throughput.py CSV (its partitioned and '
                        'replicated rows)')
    p.add_argument('--batches', type=int, default=20,
                   help='batches whose counts are averaged')
    p.add_argument('--graph-nodes', type=int, default=IGB_FULL['nodes'])
    p.add_argument('--graph-edges', type=int, default=IGB_FULL['edges'])
    p.add_argument('--features', type=int, default=IGB_FULL['features'])
    p.add_argument('--feature-bytes', type=int, default=4)
    p.add_argument('--hosts', type=int, nargs='+',
                   default=[2, 8, 16, 32, 64])
    p.add_argument('--latency-us', type=float, default=30.0,
                   help='ASSUMED all-to-all latency of the projected '
                        'cluster (a small all-to-all over InfiniBand)')
    p.add_argument('--link-gbps', type=float, default=50.0,
                   help='ASSUMED bytes a host moves a second to the others '
                        '(400 Gb/s InfiniBand: 50 GB/s)')
    p.add_argument('--out', default=None)
    return p.parse_args(argv)


def batch_counts(run: dict, batches: int) -> dict:
    # The measured run's batches, sampled here by FusedNeighborLoader (the
    # same graph, rank 0's seeds, fan-out, batch size and seed): the mean
    # frontier and draws per hop, and nodes.
    from pyg_fusesample import FusedNeighborLoader
    from pyg_fusesample.datasets import papers100m_like, products_like
    from pyg_fusesample.loader import rank_seeds
    make = papers100m_like if run['graph'].startswith('papers') else \
        products_like
    data = make(scale=float(run['scale']), seed=0)
    fanout = [int(k) for k in run['fanout'].split('-')]
    world = int(run['world_size'])
    train = data.train_mask.nonzero().view(-1)
    loader = FusedNeighborLoader(
        data, fanout, input_nodes=rank_seeds(train, 0, world, shuffle=False),
        batch_size=int(run['batch_size']), shuffle=True, seed=0,
        drop_last=True)
    L = len(fanout)
    f, d, n, k = [0.0] * L, [0.0] * L, 0.0, 0
    for batch in loader:
        nodes, edges = batch.num_sampled_nodes, batch.num_sampled_edges
        for h in range(L):
            f[h] += nodes[h]
            d[h] += edges[h]
        n += batch.num_nodes
        k += 1
        if k == batches:
            break
    return dict(frontier=[x / k for x in f], draws=[x / k for x in d],
                nodes=n / k, batches=k)


def exchanges_per_hop(fanout) -> int:
    # (messages a rank sends a hop, per peer: the most of any hop)
    return max(4 if k < 0 else 3 for k in fanout)


def exchanges_per_batch(fanout, padded: bool = True) -> int:
    # (padded: the current protocol; else every hop's replies unpadded, as
    # before; the gather of x and y: 4)
    return sum(4 if k < 0 or not padded else 3 for k in fanout) + 4


def bytes_sent(c: dict, P: int, features: int, feature_bytes: int,
               fanout, padded: bool = True) -> float:
    L, r = len(c['frontier']), (P - 1) / P
    hops = 0.0
    for k, f, d in zip(fanout, c['frontier'], c['draws']):
        hops += 16 * f + (8 * (1 + 2 * k) * f if padded and k >= 0
                          else 8 * f + 16 * d)
    sampling = L * 8 * (P - 1) + r * hops
    gather = 8 * (P - 1) + r * c['nodes'] * (8 + features * feature_bytes
                                             + 8)
    return sampling + gather


def memory_per_rank(N: int, E: int, P: int, features: int,
                    feature_bytes: int) -> dict:
    n, e = N / P, E / P
    return dict(features=n * features * feature_bytes, labels=8 * n,
                ids=8 * n, csc=8 * (n + 1) + 16 * e, node_map=8 * N)


def main(argv=None) -> int:
    args = parse_args(argv)
    with open(args.measured, newline='') as f:
        rows = list(csv.DictReader(f))
    part = next(r for r in rows if r['variant'] == 'partitioned')
    rep = next(r for r in rows if r['variant'] == 'replicated')
    P = int(part['world_size'])
    F = int(part['num_features'])
    fanout = [int(k) for k in part['fanout'].split('-')]
    c = batch_counts(part, args.batches)
    # (the protocol the measured run ran: its exchange count says)
    padded = float(part['a2a_exchanges_per_batch']) != \
        exchanges_per_batch(fanout, padded=False)
    model_bytes = bytes_sent(c, P, F, 4, fanout, padded)
    measured = float(part['a2a_sent_bytes_per_batch'])
    host_ms = float(part['step_ms']) - float(rep['step_ms'])
    exchanges = exchanges_per_batch(fanout)
    per_hop = exchanges_per_hop(fanout)
    common = dict(graph=part['graph'], scale=part['scale'],
                  fanout=part['fanout'], batch_size=part['batch_size'],
                  frontier='/'.join(f'{x:.0f}' for x in c['frontier']),
                  draws='/'.join(f'{x:.0f}' for x in c['draws']),
                  batch_nodes=f"{c['nodes']:.0f}")
    out = [dict(kind='measured', hosts=P, features=F,
                bytes_per_batch=f'{measured:.0f}',
                exchanges_per_batch=part['a2a_exchanges_per_batch'],
                step_ms=part['step_ms'], replicated_step_ms=rep['step_ms'],
                device=part['device_name'], **common),
           dict(kind='model', hosts=P, features=F,
                bytes_per_batch=f'{model_bytes:.0f}',
                model_over_measured=f'{model_bytes / measured:.4f}',
                exchanges_per_batch=exchanges_per_batch(fanout, padded),
                protocol='padded replies' if padded else
                'unpadded replies (before 2026-11-29)', **common)]
    print(f"measured run: {P} x {part['device_name']}, {part['graph']} scale "
          f"{part['scale']}: {measured / 2**20:.2f} MiB sent a batch; model "
          f"{model_bytes / 2**20:.2f} MiB ({model_bytes / measured:.3f}x); "
          f"batch: frontier {common['frontier']}, draws {common['draws']}, "
          f"{common['batch_nodes']} nodes ({c['batches']} batches)")
    N, E, FB = args.graph_nodes, args.graph_edges, args.feature_bytes
    for hosts in args.hosts:
        b = bytes_sent(c, hosts, args.features, FB, fanout)
        mem = memory_per_rank(N, E, hosts, args.features, FB)
        link_ms = b / (args.link_gbps * 1e9) * 1e3
        lat_ms = exchanges * args.latency_us / 1e3
        # (the loader's share of a step beyond a single-GPU loader's; the
        # model's own time on IGB-full's 1024 features is not modelled)
        extra = host_ms + lat_ms + link_ms
        out.append(dict(
            kind='projection', hosts=hosts, features=args.features,
            graph_nodes=N, graph_edges=E, bytes_per_batch=f'{b:.0f}',
            exchanges_per_batch=exchanges,
            messages_per_hop=per_hop * (hosts - 1),
            link_ms=f'{link_ms:.3f}', latency_ms=f'{lat_ms:.3f}',
            host_ms=f'{host_ms:.3f}', loader_excess_ms=f'{extra:.3f}',
            assumed_latency_us=args.latency_us,
            assumed_link_gbps=args.link_gbps,
            **{f'mem_{k}_gb': f'{v / 1e9:.3f}' for k, v in mem.items()},
            mem_total_gb=f'{sum(mem.values()) / 1e9:.3f}', **common))
        print(f'{hosts:3d} hosts: {b / 2**20:8.1f} MiB a batch a rank, '
              f'{per_hop * (hosts - 1)} messages a hop, link '
              f'{link_ms:6.2f} ms + '
              f'latency {lat_ms:.2f} ms + host {host_ms:.2f} ms; memory '
              f'{sum(mem.values()) / 1e9:.1f} GB a rank (features '
              f"{mem['features'] / 1e9:.1f}, node map "
              f"{mem['node_map'] / 1e9:.2f})")
    if args.out:
        os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
        columns = []
        for r in out:
            columns += [k for k in r if k not in columns]
        with open(args.out, 'w', newline='') as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerows(out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
