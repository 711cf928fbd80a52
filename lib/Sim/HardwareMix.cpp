//===- HardwareMix.cpp - which devices to rent, at the least cost -----------===//
#include "het/Sim/HardwareMix.h"
#include "het/Plan/Error.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

namespace het::sim {
using namespace het::plan;

namespace {

// One mix: nodes and market per offer.
struct Mix {
  std::vector<int> nodes;
  std::vector<bool> spot;
  bool anySpot = false;
  // Any plan on it that meets the deadline costs at least costBound per
  // iteration, and takes at least timeBound, by two arguments (the larger
  // of each is kept):
  // - FLOPs: the devices a plan uses compute the model's FLOPs W at best at
  //   their peak rate, so its cost (their price x T, T >= W / their rate)
  //   is at least W x their rate-weighted mean price per FLOP/s; to meet
  //   the deadline D their rate must reach W / D, so that mean is at least
  //   the mean over the cheapest W / D of rate the mix has (its offers by
  //   price per FLOP/s, the last one in part).
  // - Layers: a sample's forward and backward of layer l, with 1/B of the
  //   layer's optimizer step, takes a device of kind k at least c(k, l)
  //   seconds, the cost model's times at the whole global batch B on one
  //   device (per sample the roofline only gets slower at smaller
  //   micro-batches, a tensor-parallel share is no faster, every replica
  //   updates its own copy, and syncs, messages and bubbles only add). Whatever
  //   kinds a plan gives each layer, its devices are busy at least
  //   B x sum_l min_k c(k, l) seconds in all, so T >= that / the mix's
  //   devices, and its cost, the price of each device's busy time at least,
  //   is at least B x sum_l min_k price_k c(k, l).
  // Both stay well below what plans of many devices at small micro-batches
  // cost (memory-bound layers re-read their weights per micro-batch): on
  // examples/clusters/cloud-offer.json they prune nothing.
  double costBound = 0;
  double timeBound = 0;
  double pricePerHour = 0;
};

std::string describe(const Cluster &cluster, const Plan &plan) {
  std::map<int, int> used;
  for (const StagePlan &s : plan.stages)
    for (const ReplicaGroupPlan &g : s.replicaGroups)
      used[g.group] += g.replicas * s.tensorParallel;
  std::string text;
  for (const auto &[g, devices] : used) {
    const DeviceGroup &group = cluster.groups[g];
    text += (text.empty() ? "" : " + ") + std::to_string(devices) + " x " + group.kind + " (" +
            (group.spot ? "spot" : "on demand") + ")";
  }
  return text;
}

bool usesSpot(const Cluster &cluster, const Plan &plan) {
  for (const StagePlan &s : plan.stages)
    for (const ReplicaGroupPlan &g : s.replicaGroups)
      if (cluster.groups[g.group].spot)
        return true;
  return false;
}

/// Per offer and layer, the fewest seconds a device of its kind can spend
/// on one sample's forward and backward of the layer, with its share of
/// the layer's optimizer step (which runs once per iteration on at least
/// one device): the cost model's roofline at the whole global batch on one
/// device. Empty for a kind with
/// no figure for the model's dtype (it cannot be planned on either).
std::vector<std::vector<double>> bestLayerSeconds(const Inventory &inventory,
                                                  const ModelDesc &model,
                                                  const DeviceCatalog &catalog,
                                                  const MixOptions &options) {
  const int K = int(inventory.offers.size());
  std::vector<std::vector<double>> seconds(K);
  if (K == 0)
    return seconds;
  // Every offer at one node: group i is offer i (the spec keeps the offers'
  // order and names).
  Cluster one = parseCluster(inventory.clusterSpec(std::vector<int>(K, 1),
                                                   std::vector<bool>(K, false)),
                             inventory.file, catalog);
  CostModel cost(model, one, nullptr, options.setup);
  const int batch = int(std::max(1L, options.planner.globalBatch));
  const int layers = int(model.layers.size());
  for (int i = 0; i < K && i < int(one.groups.size()); ++i) {
    if (one.groups[i].name != inventory.offers[i].group ||
        one.groups[i].spec->flops(cost.format(i)) <= 0)
      continue;
    const LayerTable &t = cost.table(i, 1, batch);
    for (int l = 0; l < layers; ++l)
      seconds[i].push_back((t.range(t.compute, l, l + 1) + t.range(t.update, l, l + 1)) /
                           batch);
  }
  return seconds;
}

} // namespace

MixResult recommendMix(const Inventory &inventory, const ModelDesc &model,
                       const DeviceCatalog &catalog, const MixOptions &options) {
  auto t0 = std::chrono::steady_clock::now();
  const double deadline = options.planner.objective.deadlineSeconds;
  if (deadline <= 0)
    fail(inventory.file, "", "choosing what to rent needs a deadline per iteration (or a "
                             "throughput)");
  MixResult result;
  const int K = int(inventory.offers.size());
  double work = 0; // FLOPs of one iteration
  for (const LayerDesc &l : model.layers)
    work += (l.fwdFlops + l.bwdFlops) * double(options.planner.globalBatch);
  const double batch = double(options.planner.globalBatch);
  const std::vector<std::vector<double>> layerSeconds =
      bestLayerSeconds(inventory, model, catalog, options);

  // Every offer's choices: 1, 2, 4, ... nodes and all of them, on each
  // market it offers.
  std::vector<std::vector<std::pair<int, bool>>> choices(K);
  double space = 1;
  for (int i = 0; i < K; ++i) {
    const InventoryOffer &o = inventory.offers[i];
    std::vector<int> counts;
    for (int c = 1; c < o.maxNodes; c *= 2)
      counts.push_back(c);
    counts.push_back(o.maxNodes);
    for (int c : counts) {
      if (o.onDemand)
        choices[i].push_back({c, false});
      if (o.spot)
        choices[i].push_back({c, true});
    }
    space *= double(choices[i].size());
  }
  if (space > 20000)
    fail(inventory.file, "nodes",
         "the inventory has " + std::to_string(long(space)) +
             " mixes of node counts and markets (at most 20000: fewer offers or markets)");

  std::vector<Mix> mixes;
  std::vector<size_t> at(K, 0);
  for (bool done = K == 0; !done;) {
    Mix m;
    double rate = 0, deviceCount = 0;
    std::vector<std::pair<double, double>> ratioRate; // USD per FLOP, FLOP/s
    for (int i = 0; i < K; ++i) {
      const InventoryOffer &o = inventory.offers[i];
      auto [nodes, spot] = choices[i][at[i]];
      m.nodes.push_back(nodes);
      m.spot.push_back(spot);
      m.anySpot |= spot;
      const DeviceSpec *spec = catalog.find(o.kind);
      double devices = double(nodes) * o.devicesPerNode;
      double price = spot ? o.spotPrice : o.onDemandPrice;
      // In the format the kind would train in (NumberFormats.h).
      std::string problem;
      double flops =
          spec->flops(chooseFormat(*spec, options.setup.precision, model.dtype, problem));
      rate += devices * flops;
      m.pricePerHour += devices * price;
      deviceCount += devices;
      if (flops > 0)
        ratioRate.push_back({price / 3600 / flops, devices * flops});
    }
    // The layer bound over the kinds this mix has.
    double busy = 0, busyCost = 0;
    for (size_t l = 0; l < model.layers.size(); ++l) {
      double fastest = INFINITY, cheapest = INFINITY;
      for (int i = 0; i < K; ++i) {
        if (layerSeconds[i].empty())
          continue;
        const InventoryOffer &o = inventory.offers[i];
        double price = m.spot[i] ? o.spotPrice : o.onDemandPrice;
        fastest = std::min(fastest, layerSeconds[i][l]);
        cheapest = std::min(cheapest, price / 3600 * layerSeconds[i][l]);
      }
      busy += batch * fastest;
      busyCost += batch * cheapest;
    }
    m.timeBound = std::max(rate > 0 ? work / rate : INFINITY,
                           deviceCount > 0 ? busy / deviceCount : INFINITY);
    std::sort(ratioRate.begin(), ratioRate.end());
    const double needed = work / deadline;
    double filled = 0, spent = 0;
    for (const auto &[ratio, r] : ratioRate) {
      double take = std::min(r, needed - filled);
      if (take <= 0)
        break;
      filled += take;
      spent += take * ratio;
    }
    m.costBound = std::max(filled > 0 ? work * spent / filled : INFINITY, busyCost);
    if (m.timeBound <= deadline || !options.prune)
      mixes.push_back(m);
    // Next combination (odometer).
    int i = 0;
    while (i < K && ++at[i] == choices[i].size())
      at[i++] = 0;
    done = i == K;
  }
  result.mixes = long(space);
  std::stable_sort(mixes.begin(), mixes.end(), [](const Mix &a, const Mix &b) {
    return a.costBound != b.costBound ? a.costBound < b.costBound
                                      : a.pricePerHour < b.pricePerHour;
  });

  auto search = [&](bool allowSpot, std::vector<MixChoice> &best, long &planned) {
    auto cutoff = [&]() {
      return int(best.size()) < options.keep ? INFINITY : best.back().expectedCost;
    };
    for (Mix m : mixes) {
      if (!allowSpot && m.anySpot) {
        // On demand only: offers sold only on the spot market stay out
        // (the bound, taken with them, is still a bound without them).
        bool onDemandChoice = true;
        for (int i = 0; i < K; ++i)
          if (m.spot[i] && inventory.offers[i].onDemand)
            onDemandChoice = false;
          else if (m.spot[i])
            m.nodes[i] = 0;
        if (!onDemandChoice || *std::max_element(m.nodes.begin(), m.nodes.end()) == 0)
          continue;
        m.spot.assign(K, false);
      }
      if (options.prune && m.costBound >= cutoff())
        break;
      ++planned;
      MixChoice choice;
      choice.timeBound = m.timeBound;
      choice.costBound = m.costBound;
      choice.clusterSpec = inventory.clusterSpec(m.nodes, m.spot);
      choice.cluster = std::make_shared<Cluster>(
          parseCluster(choice.clusterSpec, inventory.file, catalog));
      CostModel cost(model, *choice.cluster, nullptr, options.setup);
      PlannerOptions planner = options.planner;
      planner.topK = 1;
      planner.objective.kind = ObjectiveKind::Cost;
      // Preemptions and failures stretch the iteration: plan for a deadline
      // tighter by the goodput found, once.
      for (int attempt = 0; attempt < 2; ++attempt) {
        PlanResult r = planPipeline(cost, planner);
        if (r.plans.empty())
          break;
        const RankedPlan &p = r.plans.front();
        PlanFailures failures = failureModelOf(cost, p.plan, {}, options.failures);
        const FailureModel &fm = failures.model;
        const double T = p.evaluation.iterationTime;
        double losses = (fm.failuresPerHour + fm.preemptionsPerHour) / 3600;
        // Checkpoints at Young's interval; every iteration takes T here,
        // and the run goes in steps of several however short T is.
        const RunSteps steps = runSteps({T}, options.horizonHours);
        long every = 0; // no losses: no checkpoints needed
        if (losses > 0)
          every = steps.stepsOf(std::max(
              1L, std::lround(youngInterval(fm.checkpointStallSeconds, 1 / losses) / T)));
        RunOutcome run = simulateRun(steps.times, fm, every, options.horizonHours,
                                     options.trials, options.seed);
        if (run.goodput <= 0)
          break; // it never makes progress
        choice.goodput = run.goodput;
        choice.plan = p.plan;
        choice.evaluation = p.evaluation;
        choice.economics = p.economics;
        choice.expectedSeconds = T / choice.goodput;
        if (choice.expectedSeconds <= deadline) {
          choice.expectedCost = p.economics.pricePerHour / 3600 * choice.expectedSeconds;
          choice.description = describe(*choice.cluster, choice.plan);
          choice.spot = usesSpot(*choice.cluster, choice.plan);
          // Rent only the offers the plan uses.
          std::vector<int> rented(K, 0);
          for (const StagePlan &s : choice.plan.stages)
            for (const ReplicaGroupPlan &g : s.replicaGroups)
              for (int i = 0; i < K; ++i)
                if (inventory.offers[i].group == choice.cluster->groups[g.group].name)
                  rented[i] = m.nodes[i];
          choice.clusterSpec = inventory.clusterSpec(rented, m.spot);
          // The plan over what is rented: its groups by name.
          auto rentedCluster = std::make_shared<Cluster>(
              parseCluster(choice.clusterSpec, inventory.file, catalog));
          for (StagePlan &s : choice.plan.stages)
            for (ReplicaGroupPlan &g : s.replicaGroups) {
              const std::string &name = choice.cluster->groups[g.group].name;
              for (size_t k = 0; k < rentedCluster->groups.size(); ++k)
                if (rentedCluster->groups[k].name == name)
                  g.group = int(k);
            }
          choice.cluster = rentedCluster;
          break;
        }
        planner.objective.deadlineSeconds = deadline * choice.goodput;
      }
      if (choice.description.empty())
        continue;
      // One entry per rental (a mix whose unused offers differ rents the same).
      auto same = std::find_if(best.begin(), best.end(), [&](const MixChoice &c) {
        return c.description == choice.description;
      });
      if (same != best.end()) {
        if (same->expectedCost <= choice.expectedCost)
          continue;
        best.erase(same);
      }
      best.push_back(std::move(choice));
      std::stable_sort(best.begin(), best.end(), [](const MixChoice &a, const MixChoice &b) {
        return a.expectedCost < b.expectedCost;
      });
      if (int(best.size()) > options.keep)
        best.pop_back();
    }
  };
  search(true, result.best, result.planned);
  search(false, result.onDemandOnly, result.plannedOnDemand);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

} // namespace het::sim
