#include "algos/registry.hpp"

namespace tutti::algos {

// Each algorithm lives in its own file and is listed here once, grouped by
// collective. Order matters only for listings (tutti-info).
extern const Algorithm kAllreduceRing, kAllreduceRecursiveDoubling, kAllreduceRecursiveHalving,
    kAllreduceTree, kAllreduceShm, kAllreduceHierarchical, kAllreduceHierarchicalShm,
    kAllreduceLeader, kAllreduceLeaderShm, kAllreduceRecursiveMultiplying,
    kAllreduceHierarchicalShmOverlap;
extern const Algorithm kReduceTree, kReduceRecursiveHalving, kReduceShm, kReduceLeader,
    kReduceLeaderShm, kReduceKnomial, kReduceBinaryTree, kReduceBinaryLeaderShm;
extern const Algorithm kBcastTree, kBcastScatterAllgather, kBcastRing, kBcastShm, kBcastLeader,
    kBcastLeaderShm, kBcastKnomial, kBcastBinaryTree, kBcastBinaryLeaderShm;
extern const Algorithm kAllgatherRing, kAllgatherRecursiveDoubling, kAllgatherBruck, kAllgatherShm,
    kAllgatherLeader, kAllgatherLeaderShm, kAllgatherHierarchicalShm;
extern const Algorithm kReduceScatterRing, kReduceScatterRecursiveHalving, kReduceScatterShm,
    kReduceScatterLeader, kReduceScatterLeaderShm;
extern const Algorithm kGatherTree, kGatherLinear, kGatherShm, kGatherLeaderShm;
extern const Algorithm kScatterTree, kScatterLinear, kScatterShm, kScatterLeaderShm;
extern const Algorithm kAlltoallPairwise, kAlltoallLinear, kAlltoallBruck, kAlltoallShm,
    kAlltoallLeader, kAlltoallHierarchicalShm, kAlltoallPairwiseCma, kAlltoallLines;
extern const Algorithm kAlltoallvPairwise, kAlltoallvLinear, kAlltoallvShm, kAlltoallvHierarchical,
    kAlltoallvHierarchicalShm;
extern const Algorithm kBarrierDissemination, kBarrierShm, kBarrierLeader, kBarrierLeaderShm;
// Single-copy reads of the peers' buffers on one node (cross-memory attach).
extern const Algorithm kAllreduceCma, kReduceCma, kBcastCma, kAllgatherCma, kGatherCma,
    kScatterCma, kAlltoallCma;
// The same inside each node of a job across nodes.
extern const Algorithm kBcastLeaderCma;
extern const Algorithm kMpiAllreduce, kMpiReduce, kMpiBcast, kMpiAllgather, kMpiReduceScatter,
    kMpiGather, kMpiScatter, kMpiAlltoall, kMpiAlltoallv, kMpiBarrier;

namespace {
const Algorithm* const kRegistry[] = {
    &kAllreduceRing, &kAllreduceRecursiveDoubling, &kAllreduceRecursiveHalving, &kAllreduceTree,
    &kAllreduceShm, &kAllreduceHierarchical, &kAllreduceHierarchicalShm, &kAllreduceLeader,
    &kAllreduceLeaderShm, &kAllreduceRecursiveMultiplying, &kAllreduceHierarchicalShmOverlap,
    &kReduceTree, &kReduceRecursiveHalving, &kReduceShm, &kReduceLeader, &kReduceLeaderShm, &kReduceKnomial,
    &kReduceBinaryTree, &kReduceBinaryLeaderShm,
    &kBcastTree, &kBcastScatterAllgather, &kBcastRing, &kBcastShm, &kBcastLeader, &kBcastLeaderShm,
    &kBcastKnomial, &kBcastBinaryTree, &kBcastBinaryLeaderShm,
    &kAllgatherRing, &kAllgatherRecursiveDoubling, &kAllgatherBruck, &kAllgatherShm,
    &kAllgatherLeader, &kAllgatherLeaderShm, &kAllgatherHierarchicalShm,
    &kReduceScatterRing, &kReduceScatterRecursiveHalving, &kReduceScatterShm,
    &kReduceScatterLeader, &kReduceScatterLeaderShm,
    &kGatherTree, &kGatherLinear, &kGatherShm, &kGatherLeaderShm,
    &kScatterTree, &kScatterLinear, &kScatterShm, &kScatterLeaderShm,
    &kAlltoallPairwise, &kAlltoallLinear, &kAlltoallBruck, &kAlltoallShm, &kAlltoallLeader,
    &kAlltoallHierarchicalShm, &kAlltoallPairwiseCma, &kAlltoallLines,
    &kAlltoallvPairwise, &kAlltoallvLinear, &kAlltoallvShm, &kAlltoallvHierarchical,
    &kAlltoallvHierarchicalShm,
    &kBarrierDissemination, &kBarrierShm, &kBarrierLeader, &kBarrierLeaderShm,
    &kAllreduceCma, &kReduceCma, &kBcastCma, &kAllgatherCma, &kGatherCma, &kScatterCma,
    &kAlltoallCma, &kBcastLeaderCma,
    // The MPI library's own collectives: the fallback for every collective.
    &kMpiAllreduce, &kMpiReduce, &kMpiBcast, &kMpiAllgather, &kMpiReduceScatter, &kMpiGather,
    &kMpiScatter, &kMpiAlltoall, &kMpiAlltoallv, &kMpiBarrier,
};

std::vector<Algorithm> flatten() {
  std::vector<Algorithm> out;
  for (const Algorithm* a : kRegistry) out.push_back(*a);
  return out;
}
}  // namespace

std::span<const Algorithm> all_algorithms() {
  static const std::vector<Algorithm> algorithms = flatten();
  return algorithms;
}

const Algorithm* find_algorithm(Collective coll, std::string_view name) {
  for (const Algorithm& a : all_algorithms())
    if (a.coll == coll && a.name == name) return &a;
  return nullptr;
}

std::vector<const Algorithm*> algorithms_for(Collective coll) {
  std::vector<const Algorithm*> out;
  for (const Algorithm& a : all_algorithms())
    if (a.coll == coll) out.push_back(&a);
  return out;
}

std::string algorithm_names(Collective coll) {
  std::string out;
  for (const Algorithm* a : algorithms_for(coll)) {
    if (!out.empty()) out += ", ";
    out += a->name;
  }
  return out;
}

}  // namespace tutti::algos
