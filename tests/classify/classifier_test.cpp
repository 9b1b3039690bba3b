#include "tpulaunch/classify/classifier.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tpulaunch {
namespace {

std::vector<std::string> rules(std::string_view source) {
  std::vector<std::string> out;
  for (const auto& e : classify_source(source).evidence) {
    out.emplace_back(to_string(e.rule));
  }
  return out;
}

// True when `c` has a row of the rule printed as `id` (tests name rules as the output does).
bool has_id(const Classification& c, std::string_view id) {
  return std::any_of(c.evidence.begin(), c.evidence.end(), [id](const Evidence& e) { return to_string(e.rule) == id; });
}

bool has(std::string_view source, std::string_view rule) { return has_id(classify_source(source), rule); }

const Evidence* first(const Classification& c, std::string_view rule) {
  for (const auto& e : c.evidence) {
    if (to_string(e.rule) == rule) {
      return &e;
    }
  }
  return nullptr;
}

using Strings = std::vector<std::string>;

// ---- cpu selection -----------------------------------------------------------------------

TEST(Classifier, DevicesCpuPositionalAndKeyword) {
  EXPECT_EQ(rules("import jax\nd = jax.devices('cpu')\n"), Strings{"devices-cpu"});
  EXPECT_EQ(rules("import jax\nd = jax.devices(backend=\"cpu\")\n"), Strings{"devices-cpu"});
  EXPECT_EQ(rules("import jax\nd = jax.devices(\"CPU\")\n"), Strings{"devices-cpu"});
  // Implicit concatenation is one literal.
  EXPECT_EQ(rules("import jax\nd = jax.devices('c' 'pu')\n"), Strings{"devices-cpu"});
}

TEST(Classifier, DevicesWithoutCpuIsNotEvidence) {
  EXPECT_TRUE(rules("import jax\nd = jax.devices()\ne = jax.devices('tpu')\nf = jax.devices(None)\n").empty());
  EXPECT_TRUE(rules("import jax\nd = jax.devices(backend='tpu')\n").empty());
  // A name whose value is unknown is not a clean bill: it may select CPU devices (fail closed).
  EXPECT_EQ(rules("import jax\nf = jax.devices(kind)\n"), Strings{"platform-unresolved"});
}

TEST(Classifier, LocalDevicesCpuKeywordAndPositional) {
  EXPECT_EQ(rules("import jax\njax.local_devices(backend='cpu')\n"), Strings{"local-devices-cpu"});
  EXPECT_EQ(rules("import jax\njax.local_devices(process_index=0, backend='cpu')\n"), Strings{"local-devices-cpu"});
  EXPECT_EQ(rules("import jax\njax.local_devices('cpu')\n"), Strings{"local-devices-cpu"});
  EXPECT_TRUE(rules("import jax\njax.local_devices()\njax.local_devices(backend='tpu')\n").empty());
}

TEST(Classifier, DefaultDeviceWithCpuDeviceCall) {
  const auto c = classify_source("import jax\nwith jax.default_device(jax.devices('cpu')[0]):\n    pass\n");
  EXPECT_EQ(rules("import jax\nwith jax.default_device(jax.devices('cpu')[0]):\n    pass\n"),
            (Strings{"default-device-cpu", "devices-cpu"})); // source order: the outer call starts first
  ASSERT_NE(first(c, "default-device-cpu"), nullptr);
  EXPECT_EQ(first(c, "default-device-cpu")->column, 6U);
  EXPECT_EQ(first(c, "devices-cpu")->column, 25U);
}

TEST(Classifier, DefaultDeviceWithNameAssignedFromCpuDevices) {
  EXPECT_TRUE(has("import jax\ncpu = jax.devices('cpu')[0]\n\nwith jax.default_device(cpu):\n    f()\n",
                  "default-device-cpu"));
  EXPECT_TRUE(has("import jax\ncpus = jax.local_devices(backend='cpu')\njax.config.update('x', 1)\n"
                  "ctx = jax.default_device(cpus[0])\n",
                  "default-device-cpu"));
}

TEST(Classifier, DefaultDeviceWithOtherDeviceIsNot) {
  EXPECT_FALSE(has("import jax\nwith jax.default_device(jax.devices()[0]):\n    pass\n", "default-device-cpu"));
  EXPECT_FALSE(has("import jax\ntpu = jax.devices()[0]\nwith jax.default_device(tpu):\n    pass\n",
                   "default-device-cpu"));
  // An attribute that happens to share the name is not the variable.
  EXPECT_FALSE(has("import jax\ncpu = jax.devices('cpu')[0]\nwith jax.default_device(self.cpu):\n    pass\n",
                   "default-device-cpu"));
}

TEST(Classifier, BackendCpuKwargOnAnyCall) {
  EXPECT_EQ(rules("import jax\nf = jax.jit(g, backend='cpu')\n"), Strings{"backend-cpu-kwarg"});
  EXPECT_EQ(rules("from functools import partial\n@partial(jax.jit, backend=\"cpu\", static_argnums=0)\ndef f(x): ...\n"),
            Strings{"backend-cpu-kwarg"});
  const auto c = classify_source("import jax\ny = jax.jit(\n    g,\n    backend='cpu',\n)(x)\n");
  ASSERT_NE(first(c, "backend-cpu-kwarg"), nullptr);
  EXPECT_EQ(first(c, "backend-cpu-kwarg")->line, 4U);
  EXPECT_EQ(first(c, "backend-cpu-kwarg")->column, 5U);
}

TEST(Classifier, BackendKwargNearMisses) {
  EXPECT_TRUE(rules("f = jax.jit(g, backend='tpu')\nname = 'tpu'\nh = jax.jit(g, backend=name)\n").empty());
  // On a JAX call a backend the classifier cannot tell is a possible CPU selection; elsewhere it is not.
  EXPECT_EQ(rules("f = jax.jit(g, backend='cpu' if a else 'tpu')\n"), Strings{"platform-unresolved"});
  EXPECT_EQ(rules("h = jax.jit(g, backend=name)\n"), Strings{"platform-unresolved"});
  EXPECT_TRUE(rules("import torch.distributed as dist\ndist.init_process_group(backend=args.backend)\n").empty());
  EXPECT_TRUE(rules("d = {backend: 'cpu'}\nx = [backend == 'cpu']\n").empty());
  // On jax.devices the devices rule reports it, not a second row.
  EXPECT_EQ(rules("import jax\njax.devices(backend='cpu')\n"), Strings{"devices-cpu"});
}

TEST(Classifier, ADefaultParameterIsADefinitionNotASelection) {
  const std::string_view sources[] = {
      "def describe(backend=\"cpu\"):\n    return backend\n",
      "import jax\ndef run(x, *, backend='cpu', devices=None):\n    return x\n",
      "async def run(x, backend='cpu'):\n    return x\n",
      "class Runner(Base, backend='cpu'):\n    pass\n",
      "describe = lambda backend='cpu': backend\n",
      "import jax\nys = jax.tree.map(lambda x, backend='cpu': x, tree)\n",
      "import jax\nf = g(lambda x=1, backend='cpu': x)\n",
      // A long signature: the `def` is far behind the parameter.
      "def run(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, backend='cpu'):\n    pass\n",
  };
  for (const auto source : sources) {
    EXPECT_TRUE(rules(source).empty()) << source;
  }
  // Passing it is a selection; so is a call in a default value, which runs when the def does.
  EXPECT_EQ(rules("def describe(backend='cpu'):\n    return backend\ndescribe(backend='cpu')\n"),
            Strings{"backend-cpu-kwarg"});
  EXPECT_EQ(rules("import jax\ndef run(x, devs=jax.devices('cpu')):\n    return x\n"), Strings{"devices-cpu"});
  EXPECT_EQ(rules("import jax\ndef run(fn=jax.jit(g, backend='cpu')):\n    return fn\n"), Strings{"backend-cpu-kwarg"});
  // After a lambda's parameters, its body's calls are calls.
  EXPECT_EQ(rules("import jax\nf = g(lambda backend='tpu': jax.jit(h, backend='cpu'))\n"), Strings{"backend-cpu-kwarg"});
  EXPECT_EQ(rules("f = g(lambda x, backend='tpu': x, backend='cpu')\n"), Strings{"backend-cpu-kwarg"});
}

TEST(Classifier, ConfigPlatformsCpu) {
  EXPECT_EQ(rules("import jax\njax.config.update('jax_platforms', 'cpu')\n"), Strings{"config-platforms-cpu"});
  EXPECT_EQ(rules("import jax\njax.config.update(\"jax_platform_name\", \"cpu\")\n"), Strings{"config-platforms-cpu"});
  EXPECT_EQ(rules("import jax\njax.config.update('jax_platforms', 'cpu,tpu')\n"), Strings{"config-platforms-cpu"});
  EXPECT_EQ(rules("from jax import config\nconfig.update('jax_platforms', 'cpu')\n"), Strings{"config-platforms-cpu"});
  EXPECT_EQ(rules("from jax import config as cfg\ncfg.update('jax_platforms', 'cpu')\n"), Strings{"config-platforms-cpu"});
}

TEST(Classifier, ConfigPlatformsNearMisses) {
  EXPECT_TRUE(rules("import jax\njax.config.update('jax_platforms', 'tpu,cpu')\n").empty());
  EXPECT_TRUE(rules("import jax\njax.config.update('jax_enable_x64', True)\n").empty());
  EXPECT_EQ(rules("import jax\njax.config.update('jax_platforms', platform)\n"), Strings{"platform-unresolved"});
  EXPECT_TRUE(rules("settings.update('jax_platforms', 'cpu')\n").empty());
}

TEST(Classifier, EnvPlatformsCpuEveryForm) {
  const std::string_view sources[] = {
      "import os\nos.environ['JAX_PLATFORMS'] = 'cpu'\n",
      "import os\nos.environ[\"JAX_PLATFORM_NAME\"] = \"cpu\"  # force\n",
      "import os\nos.environ.setdefault('JAX_PLATFORMS', 'cpu')\n",
      "import os\nos.environ.update({'JAX_PLATFORMS': 'cpu'})\n",
      "import os\nos.environ.update({'OTHER': '1', 'JAX_PLATFORMS': 'cpu,tpu'})\n",
      "import os\nos.environ.update(JAX_PLATFORMS='cpu')\n",
      "import os\nos.putenv('JAX_PLATFORMS', 'cpu')\n",
      "import os as o\no.environ['JAX_PLATFORMS'] = 'cpu'\n",
      "from os import environ\nenviron['JAX_PLATFORMS'] = 'cpu'\n",
      "from os import environ as env\nenv.setdefault('JAX_PLATFORMS', 'cpu')\n",
      "from os import putenv\nputenv('JAX_PLATFORMS', 'cpu')\n",
      "import os; os.environ['JAX_PLATFORMS'] = 'cpu'; import jax\n",
  };
  for (auto source : sources) {
    EXPECT_EQ(rules(source), Strings{"env-platforms-cpu"}) << source;
  }
}

TEST(Classifier, EnvPlatformsNearMisses) {
  const std::string_view sources[] = {
      "import os\nos.environ['JAX_PLATFORMS'] = 'tpu'\n",
      "import os\nos.environ['JAX_PLATFORMS'] = ''\n",
      "import os\nx = os.environ.get('JAX_PLATFORMS', 'cpu')\n",
      "import os\nos.environ['OTHER'] = 'cpu'\n",
      "import os\nif os.environ['JAX_PLATFORMS'] == 'cpu':\n    pass\n",
      "import os\nos.environ.update({'JAX_PLATFORMS': 'tpu'})\n",
  };
  for (auto source : sources) {
    EXPECT_TRUE(rules(source).empty()) << source;
  }
}

TEST(Classifier, XlaForceHostDevicesEveryForm) {
  const std::string_view sources[] = {
      "import os\nos.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'\n",
      "import os\nos.environ['XLA_FLAGS'] = os.environ.get('XLA_FLAGS', '') + ' --xla_force_host_platform_device_count=8'\n",
      "import os\nos.environ['XLA_FLAGS'] = f'--xla_force_host_platform_device_count={n}'\n",
      "import os\nos.environ['XLA_FLAGS'] += ' --xla_force_host_platform_device_count=4'\n",
      "import os\nos.environ.setdefault('XLA_FLAGS', '--xla_force_host_platform_device_count=8')\n",
      "import os\nos.environ.update(XLA_FLAGS='--xla_force_host_platform_device_count=8')\n",
      "import os\nos.putenv('XLA_FLAGS', '--xla_force_host_platform_device_count=2')\n",
  };
  for (auto source : sources) {
    EXPECT_EQ(rules(source), Strings{"xla-force-host-devices"}) << source;
  }
  EXPECT_TRUE(rules("import os\nos.environ['XLA_FLAGS'] = '--xla_dump_to=/tmp/x'\n").empty());
  EXPECT_TRUE(rules("import os\nos.environ['OTHER'] = '--xla_force_host_platform_device_count=8'\n").empty());
  EXPECT_TRUE(rules("import os\nprint('--xla_force_host_platform_device_count=8')\n").empty());
}

TEST(Classifier, EnvUpdateWithSeveralKeysReportsEach) {
  EXPECT_EQ(rules("import os\nos.environ.update({\n  'JAX_PLATFORMS': 'cpu',\n"
                  "  'XLA_FLAGS': '--xla_force_host_platform_device_count=8',\n})\n"),
            (Strings{"env-platforms-cpu", "xla-force-host-devices"}));
}

TEST(Classifier, NumCpuDevices) {
  EXPECT_EQ(rules("import jax\njax.config.update('jax_num_cpu_devices', 8)\n"), Strings{"num-cpu-devices"});
  EXPECT_EQ(rules("config.update(\"jax_num_cpu_devices\", n)\n"), Strings{"num-cpu-devices"});
  EXPECT_TRUE(rules("import jax\njax.config.update('jax_num_gpu_devices', 8)\n").empty());
  EXPECT_TRUE(rules("import jax\nprint('jax_num_cpu_devices')\n").empty());
}

// ---- multi-host ----------------------------------------------------------------------------

TEST(Classifier, DistributedInitialize) {
  EXPECT_EQ(rules("import jax\njax.distributed.initialize()\n"), Strings{"distributed-initialize"});
  EXPECT_EQ(rules("import jax\njax.distributed.initialize(coordinator_address=addr, num_processes=2)\n"),
            Strings{"distributed-initialize"});
  EXPECT_EQ(rules("from jax import distributed\ndistributed.initialize()\n"), Strings{"distributed-initialize"});
  EXPECT_TRUE(rules("import torch\ntorch.distributed.initialize()\ninitialize()\n").empty());
  EXPECT_TRUE(rules("import jax\nf = jax.distributed.initialize\n").empty()); // a reference, not a call
}

TEST(Classifier, ProcessIndexAndCount) {
  EXPECT_EQ(rules("import jax\nif jax.process_index() == 0:\n    n = jax.process_count()\n"),
            (Strings{"process-index", "process-count"}));
  EXPECT_TRUE(rules("import jax\nidx = process_index()\nn = other.process_count()\n").empty());
}

TEST(Classifier, CollectivesThroughEveryImportForm) {
  const std::string_view sources[] = {
      "import jax\ny = jax.lax.psum(x, 'i')\n",
      "from jax import lax\ny = lax.pmean(x, 'i')\n",
      "import jax.lax as lax\ny = lax.all_gather(x, 'i')\n",
      "from jax.lax import psum_scatter\ny = psum_scatter(x, 'i')\n",
      "from jax import lax as L\ny = L.ppermute(x, 'i', perm)\n",
      "import jax\ny = jax.lax.all_to_all(x, 'i', 0, 0)\n",
      "from jax.experimental.shard_map import shard_map\nf = shard_map(g, mesh, in_specs=P(), out_specs=P())\n",
      "import jax\nf = jax.experimental.shard_map.shard_map(g, mesh, P(), P())\n",
      "import jax\nf = jax.shard_map(g, mesh=mesh, in_specs=P(), out_specs=P())\n",
      "import jax\na = jax.make_array_from_single_device_arrays(shape, sharding, arrays)\n",
      "from jax.experimental import multihost_utils\ny = multihost_utils.process_allgather(x)\n",
      "from jax.experimental import multihost_utils as mhu\ny = mhu.host_local_array_to_global_array(x, mesh, P())\n",
  };
  for (auto source : sources) {
    EXPECT_EQ(rules(source), Strings{"collective"}) << source;
  }
}

TEST(Classifier, ShardMapReferenceCounts) {
  EXPECT_EQ(rules("from functools import partial\nfrom jax.experimental.shard_map import shard_map\n"
                  "@partial(shard_map, mesh=mesh, in_specs=P('x'), out_specs=P())\ndef f(x): ...\n"),
            Strings{"collective"});
}

TEST(Classifier, CollectiveNearMisses) {
  EXPECT_TRUE(rules("import mylib\ny = mylib.lax.psum(x)\n").empty());
  EXPECT_TRUE(rules("y = psum(x, 'i')\n").empty());
  EXPECT_TRUE(rules("from jax.lax import psum\ndef psum(x):\n    return x\n").empty()); // a definition, not a use
  EXPECT_TRUE(rules("from jax.lax import psum\n").empty()); // importing is not using
  EXPECT_TRUE(rules("import numpy as lax\ny = lax.psum(x)\n").empty());
  // An attribute of the collective is not a use of it.
  EXPECT_TRUE(rules("import jax\nname = jax.lax.psum.__name__\n").empty());
}

TEST(Classifier, ProcessLocalDataIsCollectiveAndPerProcessData) {
  EXPECT_EQ(rules("import jax\na = jax.make_array_from_process_local_data(sharding, local)\n"),
            (Strings{"collective", "process-local-data"}));
}

TEST(Classifier, GlobalBarrier) {
  EXPECT_EQ(rules("from jax.experimental import multihost_utils\nmultihost_utils.sync_global_devices('done')\n"),
            Strings{"global-barrier"});
  EXPECT_EQ(rules("import jax\njax.experimental.multihost_utils.sync_global_devices('x')\n"), Strings{"global-barrier"});
  EXPECT_TRUE(rules("utils.sync_global_devices('x')\n").empty());
}

TEST(Classifier, ResultCheckRaiseAndAssert) {
  EXPECT_EQ(rules("assert total == expected\n"), Strings{"result-check"});
  EXPECT_EQ(rules("if bad:\n    raise ValueError('mismatch')\n"), Strings{"result-check"});
  EXPECT_TRUE(rules("mock.assert_called()\nx = 'assert y'\n# raise here\n").empty());
}

// Weak multi-host evidence (issue 23): a printed process index, an assert on a shape, and an
// initialize() behind an `if`.
TEST(Classifier, ProcessIndexOnlyPrintedIsNoPerProcessData) {
  const std::string_view sources[] = {
      "import jax\nprint(jax.process_index())\n",
      "import jax\nprint('process', jax.process_index(), 'of', jax.process_count(), flush=True)\n",
      "import jax\nprint([jax.process_index()])\n",
      "import logging\nimport jax\nlogging.info('process %d', jax.process_index())\n",
      "import jax\nlogger.warning('process %d of %d', jax.process_index(), jax.process_count())\n",
      "import jax\njax.debug.print('{i}', i=jax.process_index())\n",
      "from pprint import pprint\nimport jax\npprint({'index': jax.process_index()})\n",
  };
  for (const auto source : sources) {
    const auto c = classify_source(source);
    EXPECT_TRUE(has_id(c, "process-index-printed")) << source;
    EXPECT_FALSE(has_id(c, "process-index")) << source;
    EXPECT_FALSE(has_id(c, "process-count")) << source;
    const auto missing = missing_multi_host_markers(c);
    EXPECT_NE(std::find(missing.begin(), missing.end(), "per-process data"), missing.end()) << source;
  }
  // Computed with, compared, assigned, or passed to a call that is not output: per-process data.
  const std::string_view data[] = {
      "import jax\nprint(f(jax.process_index()))\n",
      "import jax\nidx = jax.process_index()\nprint(idx)\n",
      "import jax\nif jax.process_index() == 0:\n    print('leader')\n",
      "import jax\nwrite(json.dumps({'process': jax.process_index()}))\n",
      "import jax\ny = jnp.log(jax.process_count())\n",
  };
  for (const auto source : data) {
    const auto c = classify_source(source);
    EXPECT_TRUE(has_id(c, "process-index") || has_id(c, "process-count")) << source;
  }
  // In print's own arguments: `x[...]` and `(...)` are looked through, `f(...)` is a computation.
  EXPECT_EQ(rules("import jax\nprint(x[jax.process_index()], (jax.process_count()))\n"),
            (Strings{"process-index-printed", "process-index-printed"}));
}

TEST(Classifier, AnAssertOnAShapeIsNoResultCheck) {
  const std::string_view shapes[] = {
      "assert total.shape == (8,)\n",
      "assert y.shape[0] == 4 * jax.process_count(), 'one row per process'\n",
      "assert x.ndim == 2 and x.dtype == jnp.float32\n",
      "assert (a.shape == b.shape) or a.size == 0\n",
      "if x: assert y.shape == z.shape\n",
  };
  for (const auto source : shapes) {
    const auto c = classify_source(source);
    EXPECT_TRUE(has_id(c, "shape-assert")) << source;
    EXPECT_FALSE(has_id(c, "result-check")) << source;
    const auto missing = missing_multi_host_markers(c);
    EXPECT_NE(std::find(missing.begin(), missing.end(), "result check"), missing.end()) << source;
  }
  const std::string_view results[] = {
      "assert float(total) == expected\n",
      "assert total.shape == (8,) and float(total.sum()) == 36.0\n",
      "assert jnp.allclose(y, 4.0), f'got shape {y.shape}'\n", // the message is not the test
      "assert shape == (8,)\n",                                  // a name, not an array's attribute
      "assert len(results) == 4\n",
  };
  for (const auto source : results) {
    EXPECT_EQ(rules(source), Strings{"result-check"}) << source;
  }
  // Each statement is its own assert, with its own position.
  const auto c = classify_source("assert x.shape == (2,); assert x.sum() == 3\n");
  ASSERT_EQ(c.evidence.size(), 2U);
  EXPECT_EQ(to_string(c.evidence[0].rule), "shape-assert");
  EXPECT_EQ(c.evidence[0].column, 1U);
  EXPECT_EQ(to_string(c.evidence[1].rule), "result-check");
  EXPECT_EQ(c.evidence[1].column, 25U);
}

TEST(Classifier, AnInitializeBehindAnIfSaysSo) {
  const std::string source =
      "import jax\nimport jax.numpy as jnp\nfrom jax.experimental import multihost_utils\n"
      "if args.multi_host:\n    jax.distributed.initialize()\n"
      "local = jnp.ones(4) * jax.process_index()\n"
      "total = multihost_utils.process_allgather(local)\n"
      "assert float(total.sum()) == 6.0\n";
  const auto c = classify_source(source);
  const Evidence* init = first(c, "distributed-initialize");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->line, 5U);
  EXPECT_EQ(init->detail, "conditional: it runs only inside `if args.multi_host:` (line 4), so a host where that "
                          "does not hold never joins");
  EXPECT_FALSE(is_undecided(*init));
  EXPECT_TRUE(missing_multi_host_markers(c).empty()); // it is still the initialize marker
  EXPECT_FALSE(c.suggested.has_value());              // but no longer a multi-host-qualified suggestion
  EXPECT_EQ(c.why, "initializes distributed JAX at line 5, but " + init->detail + "; a reviewer must decide");
  // Unconditional (the entry point guard is no condition): the suggestion stands, no detail.
  const auto main = classify_source("import jax\nimport jax.numpy as jnp\nfrom jax.experimental import "
                                    "multihost_utils\nif __name__ == '__main__':\n    jax.distributed.initialize()\n"
                                    "local = jnp.ones(4) * jax.process_index()\n"
                                    "total = multihost_utils.process_allgather(local)\n"
                                    "assert float(total.sum()) == 6.0\n");
  ASSERT_NE(first(main, "distributed-initialize"), nullptr);
  EXPECT_TRUE(first(main, "distributed-initialize")->detail.empty());
  ASSERT_TRUE(main.suggested.has_value());
  EXPECT_EQ(*main.suggested, ScriptClass::multi_host_qualified);
  // With markers missing as well.
  const auto lacking = classify_source("import jax\nif multi: jax.distributed.initialize()\n");
  EXPECT_EQ(lacking.why, "initializes distributed JAX at line 2 (conditionally) but lacks: per-process data, "
                         "collective, result check");
  EXPECT_EQ(first(classify_source("import jax\nx = jax.distributed.initialize() if multi else None\n"),
                  "distributed-initialize")
                ->detail,
            "conditional: it is an operand of a conditional expression (if/else, and, or) at line 2, so a host may "
            "never call it");
}

TEST(Classifier, AnInitializeInAOneLineIfOrAConditionalExpression) {
  const auto detail = [](std::string_view source) {
    const auto c = classify_source(source);
    const Evidence* row = first(c, "distributed-initialize");
    return row == nullptr ? std::string("no row") : row->detail;
  };
  const std::string expression = "conditional: it is an operand of a conditional expression (if/else, and, or) at "
                                 "line 2, so a host may never call it";
  for (std::string_view source : {
           "import jax\nx = jax.distributed.initialize() if multi else None\n",
           "import jax\nx = None if single else jax.distributed.initialize()\n",
           "import jax\nmulti and jax.distributed.initialize()\n",
           "import jax\nsingle or jax.distributed.initialize()\n",
           "import jax\nf(a, multi and jax.distributed.initialize())\n",
           "import jax\nif a: x = jax.distributed.initialize() if b else None\n", // the innermost condition
           "import jax\n[jax.distributed.initialize() for _ in range(1) if multi]\n",
       }) {
    EXPECT_EQ(detail(source), expression) << source;
  }
  // At the very end of a file without a line end, and under an alias.
  EXPECT_EQ(detail("import jax\nif multi:\n    jax.distributed.initialize()"),
            "conditional: it runs only inside `if multi:` (line 2), so a host where that does not hold never joins");
  EXPECT_EQ(detail("from jax.distributed import initialize as join\nfor h in hosts:\n    join()\n"),
            "conditional: it runs only inside `for h in hosts:` (line 2), so a host where that does not hold never "
            "joins");
  EXPECT_EQ(detail("import jax\nif multi: jax.distributed.initialize()\n"),
            "conditional: it runs only inside `if multi:` (line 2), so a host where that does not hold never joins");
  EXPECT_EQ(detail("import jax\nif a:\n    pass\nelse: jax.distributed.initialize()\n"),
            "conditional: it runs only inside `else:` (line 4), so a host where that does not hold never joins");
  for (std::string_view source : {
           "import jax\njax.distributed.initialize() and report()\n",
           "import jax\nf(jax.distributed.initialize(), x if c else y)\n",
           "import jax\ny = a if b else c; jax.distributed.initialize()\n",
           "import jax\nif jax.distributed.initialize():\n    pass\n",
           "import jax\nwith ctx(): jax.distributed.initialize()\n",
           "import jax\nif __name__ == '__main__': jax.distributed.initialize()\n",
           "from jax.distributed import initialize as init\ninit()\nok = x if y else z\n",
       }) {
    EXPECT_EQ(detail(source), "") << source;
  }
}

// ---- backend assertion -----------------------------------------------------------------------

TEST(Classifier, BackendIsTpuEveryForm) {
  const std::string_view sources[] = {
      "import jax\nassert jax.default_backend() == 'tpu'\n",
      "import jax\nif jax.default_backend() != \"tpu\":\n    sys.exit(1)\n",
      "import jax\nok = 'tpu' == jax.default_backend()\n",
      "import jax\nok = jax.default_backend() in ('tpu', 'gpu')\n",
      "import jax\nok = jax.default_backend() not in ['tpu']\n",
      "from jax import default_backend\nok = default_backend() == 'tpu'\n",
      "import jax\nok = jax.devices()[0].platform == 'tpu'\n",
      "import jax\nok = all(d.platform == 'tpu' for d in jax.devices())\n",
      "import jax\nok = 'tpu' == device.platform\n",
  };
  for (auto source : sources) {
    EXPECT_EQ(rules(source), Strings{"backend-is-tpu"}) << source;
  }
}

TEST(Classifier, BackendIsTpuNearMisses) {
  EXPECT_TRUE(rules("import jax\nok = jax.default_backend() == 'gpu'\n").empty());
  EXPECT_TRUE(rules("import jax\nprint(jax.default_backend(), 'tpu')\n").empty());
  EXPECT_TRUE(rules("import jax\nok = platform == 'tpu'\n").empty());
  EXPECT_TRUE(rules("import jax\nok = foo.default_backend() == 'tpu'\n").empty());
  EXPECT_TRUE(rules("import jax\nok = 'tpu' == name\n").empty());
}

TEST(Classifier, BackendEvidenceStartsAtTheExpression) {
  const auto c = classify_source("import jax\nok = jax.devices()[0].platform == 'tpu'\n");
  ASSERT_EQ(c.evidence.size(), 1U);
  EXPECT_EQ(c.evidence[0].line, 2U);
  EXPECT_EQ(c.evidence[0].column, 6U);
}

TEST(Classifier, BackendGuardIsNotAResultCheck) {
  EXPECT_EQ(rules("import jax\nassert jax.default_backend() == 'tpu', 'needs a TPU'\n"), Strings{"backend-is-tpu"});
  EXPECT_EQ(rules("import jax\nif jax.default_backend() != 'tpu':\n    raise SystemExit('needs a TPU')\n"),
            Strings{"backend-is-tpu"});
  EXPECT_EQ(rules("import jax\nif jax.default_backend() != 'tpu': raise SystemExit(1)\n"), Strings{"backend-is-tpu"});
  // A later, unrelated assert still is one.
  EXPECT_EQ(rules("import jax\nif jax.default_backend() != 'tpu':\n    raise SystemExit(1)\nx = 1\nassert x == 1\n"),
            (Strings{"backend-is-tpu", "result-check"}));
}

TEST(Classifier, BackendIsTpuThroughAName) {
  const auto c = classify_source("import jax\nbackend = jax.default_backend()\n"
                                 "assert backend == \"tpu\", f\"expected the tpu backend, got {backend!r}\"\n");
  ASSERT_EQ(c.evidence.size(), 1U);
  EXPECT_EQ(to_string(c.evidence[0].rule), "backend-is-tpu");
  EXPECT_EQ(c.evidence[0].line, 3U);
  EXPECT_EQ(c.evidence[0].column, 8U); // at the name
  EXPECT_EQ(rules("import jax\np = jax.devices()[0].platform\nif p != \"tpu\":\n    raise SystemExit(1)\n"),
            Strings{"backend-is-tpu"});
  const std::string_view sources[] = {
      "import jax\nb = jax.default_backend()\nok = 'tpu' == b\n",
      "import jax\nb = jax.default_backend()\nok = 'tpu' != b and x\n",
      "import jax\nb = jax.default_backend()\nok = b in ('tpu', 'gpu')\n",
      "import jax\nb = jax.default_backend()\nok = b not in ['tpu']\n",
      "import jax\nb = jax.default_backend()\nok = 'tpu' in b\n",
      "import jax\nb = jax.default_backend(); ok = b == 'tpu'\n",
      "import jax\nif x:\n    b = device.platform\nprint(b)\nok = b == 'tpu'\n",
      "import jax\nb = jax.default_backend()\nc = 1\ndef f():\n    return b == 'tpu'\n",
  };
  for (auto source : sources) {
    EXPECT_EQ(rules(source), Strings{"backend-is-tpu"}) << source;
  }
}

TEST(Classifier, BackendIsTpuThroughANameAndAnAlias) {
  const std::string_view sources[] = {
      "import jax as jx\nbackend = jx.default_backend()\nassert backend == 'tpu'\n",
      "from jax import default_backend\nbackend = default_backend()\nassert backend == 'tpu'\n",
      "from jax import default_backend as db\nbackend = db()\nassert 'tpu' == backend\n",
      "import jax as jx\np = jx.local_devices()[0].platform\nif p != 'tpu':\n    raise SystemExit(1)\n",
  };
  for (auto source : sources) {
    EXPECT_EQ(rules(source), Strings{"backend-is-tpu"}) << source;
  }
}

TEST(Classifier, BackendIsTpuThroughANameNearMisses) {
  const std::string_view sources[] = {
      // Never assigned from a backend expression.
      "import jax\nbackend = get_backend()\nok = backend == 'tpu'\n",
      "import jax\nbackend = 'tpu'\nok = backend == 'tpu'\n",
      "import jax\nbackend = foo.default_backend()\nok = backend == 'tpu'\n",
      "import jax\nbackend = jax.default_backend().upper()\nok = backend == 'tpu'\n",
      "import jax\nbackend = str(jax.default_backend())\nok = backend == 'tpu'\n",
      "import jax\nbackend = lambda: jax.default_backend()\nok = backend == 'tpu'\n",
      "import jax\nbackend == 'tpu'\nbackend = jax.default_backend()\n",
      // Assigned, then reassigned to something else: the last assignment wins.
      "import jax\nb = jax.default_backend()\nb = 'gpu'\nok = b == 'tpu'\n",
      "import jax\np = jax.devices()[0].platform\np = other()\nif p != 'tpu':\n    x = 1\n",
      // A backend name that is not the whole operand, or an attribute of the same name.
      "import jax\nb = jax.default_backend()\nok = 'tpu' == b.upper()\n",
      "import jax\nb = jax.default_backend()\nok = 'tpu' == b[0]\n",
      "import jax\nb = jax.default_backend()\nok = self.b == 'tpu'\n",
      "import jax\nb = jax.default_backend()\nok = b == 'gpu'\n",
  };
  for (auto source : sources) {
    EXPECT_TRUE(rules(source).empty()) << source;
  }
  // Assigned again from a backend expression after a reassignment: counts again.
  EXPECT_EQ(rules("import jax\nb = jax.default_backend()\nb = 1\nb = jax.default_backend()\nok = b == 'tpu'\n"),
            Strings{"backend-is-tpu"});
}

TEST(Classifier, BackendGuardThroughANameIsNotAResultCheck) {
  EXPECT_EQ(rules("import jax\nbackend = jax.default_backend()\nassert backend == 'tpu', 'needs a TPU'\n"),
            Strings{"backend-is-tpu"});
  EXPECT_EQ(rules("import jax\np = jax.devices()[0].platform\nif p != 'tpu':\n    raise SystemExit('needs a TPU')\n"),
            Strings{"backend-is-tpu"});
  EXPECT_EQ(rules("import jax\np = jax.devices()[0].platform\nif p != 'tpu': raise SystemExit(1)\n"),
            Strings{"backend-is-tpu"});
  // A later, unrelated assert still is one; an assert on a name that is not the backend too.
  EXPECT_EQ(rules("import jax\nb = jax.default_backend()\nassert b == 'tpu'\nx = 1\nassert x == 1\n"),
            (Strings{"backend-is-tpu", "result-check"}));
  EXPECT_EQ(rules("import jax\nb = 'gpu'\nassert b == 'tpu'\n"), Strings{"result-check"});
}

// ---- aliases -------------------------------------------------------------------------------

TEST(Classifier, AliasImportJaxAs) {
  EXPECT_EQ(rules("import jax as jx\njx.devices('cpu')\n"), Strings{"devices-cpu"});
}

TEST(Classifier, AliasFromJaxImportDevices) {
  EXPECT_EQ(rules("from jax import devices\ndevices('cpu')\n"), Strings{"devices-cpu"});
  EXPECT_EQ(rules("from jax import devices as d\nd('cpu')\n"), Strings{"devices-cpu"});
  EXPECT_EQ(rules("from jax import (\n    numpy as jnp,\n    devices as d,\n)\nd('cpu')\n"), Strings{"devices-cpu"});
  EXPECT_EQ(rules("from jax import numpy as jnp, local_devices\nlocal_devices(backend='cpu')\n"),
            Strings{"local-devices-cpu"});
}

TEST(Classifier, AliasAsOnlyBindsTheAlias) {
  // `from jax import devices as d` does not bind `devices`.
  EXPECT_TRUE(rules("from jax import devices as d\nfrom mylib import devices\ndevices('cpu')\n").empty());
  EXPECT_TRUE(rules("from mylib import devices\ndevices('cpu')\n").empty());
}

TEST(Classifier, AttributeOfAnotherObjectIsNotJax) {
  EXPECT_TRUE(rules("import jax\nfoo.devices('cpu')\n").empty());
  EXPECT_TRUE(rules("import jax\nself.jax.devices('cpu')\n").empty());
  EXPECT_TRUE(rules("import jax\nget().devices('cpu')\n").empty());
  EXPECT_TRUE(rules("devices('cpu')\n").empty()); // not imported from jax
}

TEST(Classifier, ImportJaxNumpyIsIrrelevantButBindsJax) {
  EXPECT_TRUE(rules("import jax.numpy as jnp\njnp.devices('cpu')\n").empty());
  EXPECT_EQ(rules("import jax.numpy\njax.devices('cpu')\n"), Strings{"devices-cpu"});
}

TEST(Classifier, RebindingAnAliasReplacesIt) {
  EXPECT_TRUE(rules("import jax\nimport numpy as jax\njax.devices('cpu')\n").empty());
  EXPECT_EQ(rules("import numpy as np, jax as j\nj.devices('cpu')\n"), Strings{"devices-cpu"});
}

TEST(Classifier, RelativeImportsDoNotResolveToJax) {
  EXPECT_TRUE(rules("from jax import devices\nfrom . import devices\ndevices('cpu')\n").empty());
}

TEST(Classifier, ImportInsideFunctionIsTracked) {
  EXPECT_EQ(rules("def main():\n    import jax as J\n    return J.devices('cpu')\n"), Strings{"devices-cpu"});
}

TEST(Classifier, YieldFromAndRaiseFromAreNotImports) {
  EXPECT_EQ(rules("import jax\ndef g():\n    yield from gen()\n    raise E from err\njax.devices('cpu')\n"),
            (Strings{"result-check", "devices-cpu"}));
}

// ---- text is never evidence ----------------------------------------------------------------

TEST(Classifier, CommentsDocstringsStringsAndFStringsAreNeverEvidence) {
  const std::string_view sources[] = {
      "import jax\n# jax.devices('cpu')\n",
      "import jax\ndef f():\n    \"\"\"Run jax.devices('cpu') and jax.distributed.initialize().\"\"\"\n",
      "import jax\nmsg = \"jax.devices('cpu') jax.config.update('jax_platforms', 'cpu')\"\n",
      "import jax\nmsg = f\"{x} jax.devices('cpu') {y}\"\n",
      "import jax\nmsg = '''\nassert x\nraise E\nlax.psum(x)\n'''\n",
      "import os\ndoc = \"os.environ['JAX_PLATFORMS'] = 'cpu'\"\n",
  };
  for (auto source : sources) {
    EXPECT_TRUE(rules(source).empty()) << source;
  }
}

// ---- positions and text ----------------------------------------------------------------------

TEST(Classifier, LineColumnAndTrimmedText) {
  const auto c = classify_source("import jax\n\ndef main():\n    devs = jax.devices('cpu')   \n");
  ASSERT_EQ(c.evidence.size(), 1U);
  const auto& e = c.evidence[0];
  EXPECT_EQ(to_string(e.rule), "devices-cpu");
  EXPECT_EQ(e.category, Category::cpu_selection);
  EXPECT_EQ(e.line, 4U);
  EXPECT_EQ(e.column, 12U);
  EXPECT_EQ(e.text, "devs = jax.devices('cpu')");
  EXPECT_EQ(e.implies, find_classifier_rule("devices-cpu")->implies);
}

TEST(Classifier, CallSpanningLinesReportsItsFirstLine) {
  const auto c = classify_source("import jax\njax.config.update(\n    'jax_platforms',\n    'cpu',\n)\n");
  ASSERT_EQ(c.evidence.size(), 1U);
  EXPECT_EQ(c.evidence[0].line, 2U);
  EXPECT_EQ(c.evidence[0].column, 1U);
  EXPECT_EQ(c.evidence[0].text, "jax.config.update(");
}

TEST(Classifier, LongLinesAreCutInEvidenceText) {
  const std::string source = "import jax; x = jax.devices('cpu'); y = [" + std::string(5000, '1') + "]\n";
  const auto c = classify_source(source);
  ASSERT_EQ(c.evidence.size(), 1U);
  EXPECT_EQ(c.evidence[0].text.size(), 203U);
  EXPECT_EQ(c.evidence[0].text.substr(0, 24), "import jax; x = jax.devi");
  EXPECT_EQ(c.evidence[0].text.substr(200), "...");
}

TEST(Classifier, CrLfSourcesReportCleanText) {
  const auto c = classify_source("import jax\r\nx = jax.devices('cpu')\r\n");
  ASSERT_EQ(c.evidence.size(), 1U);
  EXPECT_EQ(c.evidence[0].line, 2U);
  EXPECT_EQ(c.evidence[0].text, "x = jax.devices('cpu')");
}

TEST(Classifier, EvidenceIsInSourceOrder) {
  const auto c = classify_source("import jax\njax.distributed.initialize()\nassert 1\nx = jax.devices('cpu')\n"
                                 "n = jax.process_count()\n");
  ASSERT_EQ(c.evidence.size(), 4U);
  for (std::size_t i = 1; i < c.evidence.size(); ++i) {
    EXPECT_LT(c.evidence[i - 1].line, c.evidence[i].line);
  }
}

TEST(Classifier, CategoryQueries) {
  const auto c = classify_source("import jax\njax.devices('cpu')\njax.process_index()\nassert x\n");
  EXPECT_TRUE(c.has_category(Category::cpu_selection));
  EXPECT_TRUE(c.has_category(Category::multi_host));
  EXPECT_FALSE(c.has_category(Category::backend_assertion));
  const auto mh = c.of_category(Category::multi_host);
  ASSERT_EQ(mh.size(), 2U);
  EXPECT_EQ(to_string(mh[0]->rule), "process-index");
  EXPECT_EQ(to_string(mh[1]->rule), "result-check");
  EXPECT_TRUE(has_id(c, "devices-cpu"));
  EXPECT_FALSE(has_id(c, "collective"));
}

// ---- suggestions ---------------------------------------------------------------------------

TEST(Classifier, SuggestsCpuOnlyForCpuSelection) {
  const auto c = classify_source("import jax\n\nx = jax.devices('cpu')\n");
  ASSERT_TRUE(c.suggested.has_value());
  EXPECT_EQ(*c.suggested, ScriptClass::cpu_only);
  EXPECT_EQ(c.why, "selects CPU devices at line 3 (devices-cpu)");
  EXPECT_TRUE(c.contradictions.empty());
}

TEST(Classifier, SuggestsCpuOnlyForCollectivesOverForcedHostDevices) {
  const auto c = classify_source(
      "import os\nos.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'\nimport jax\n"
      "y = jax.lax.psum(x, 'i')\nassert y == 8\n");
  ASSERT_TRUE(c.suggested.has_value());
  EXPECT_EQ(*c.suggested, ScriptClass::cpu_only);
  EXPECT_NE(c.why.find("collectives (line 4)"), std::string::npos) << c.why;
}

TEST(Classifier, NoSuggestionWhenCpuSelectionContradictsInitialize) {
  const auto c = classify_source("import jax\njax.config.update('jax_platforms', 'cpu')\n\n\n\n\n\n\n"
                                 "jax.distributed.initialize()\n");
  EXPECT_FALSE(c.suggested.has_value());
  ASSERT_EQ(c.contradictions.size(), 1U);
  EXPECT_EQ(c.contradictions[0], "cpu selection at line 2 contradicts jax.distributed.initialize() at line 9");
  EXPECT_EQ(c.why, "contradictory evidence: " + c.contradictions[0]);
}

TEST(Classifier, NoSuggestionWhenCpuSelectionContradictsBackendCheck) {
  const auto c = classify_source("import jax\nassert jax.default_backend() == 'tpu'\njax.devices('cpu')\n");
  EXPECT_FALSE(c.suggested.has_value());
  ASSERT_EQ(c.contradictions.size(), 1U);
  EXPECT_EQ(c.contradictions[0], "cpu selection at line 3 contradicts the TPU backend check at line 2");
}

TEST(Classifier, SuggestsMultiHostQualifiedWithAllMarkers) {
  const auto c = classify_source(
      "import jax\nimport jax.numpy as jnp\nfrom jax.experimental import multihost_utils\n"
      "jax.distributed.initialize()\n"
      "local = jnp.ones(4) * jax.process_index()\n"
      "total = multihost_utils.process_allgather(local)\n"
      "assert float(total.sum()) == 4.0 * jax.process_count()\n");
  ASSERT_TRUE(c.suggested.has_value());
  EXPECT_EQ(*c.suggested, ScriptClass::multi_host_qualified);
  EXPECT_TRUE(missing_multi_host_markers(c).empty());
  EXPECT_EQ(c.why, "initializes distributed JAX at line 4 and has per-process data, a collective and a result check");
}

TEST(Classifier, ProcessLocalDataSatisfiesPerProcessAndCollective) {
  const auto c = classify_source("import jax\njax.distributed.initialize()\n"
                                 "a = jax.make_array_from_process_local_data(s, x)\nif a is None:\n    raise E\n");
  ASSERT_TRUE(c.suggested.has_value());
  EXPECT_EQ(*c.suggested, ScriptClass::multi_host_qualified);
}

TEST(Classifier, NoSuggestionWhenInitializeLacksMarkers) {
  const auto c = classify_source("import jax\njax.distributed.initialize()\nidx = jax.process_index()\n");
  EXPECT_FALSE(c.suggested.has_value());
  EXPECT_EQ(missing_multi_host_markers(c), (std::vector<std::string_view>{"collective", "result check"}));
  EXPECT_EQ(c.why, "initializes distributed JAX at line 2 but lacks: collective, result check");
}

TEST(Classifier, MissingMarkersOfAnEmptyScriptAreAllFour) {
  EXPECT_EQ(missing_multi_host_markers(classify_source("x = 1\n")),
            (std::vector<std::string_view>{"initialize", "per-process data", "collective", "result check"}));
}

TEST(Classifier, SuggestsSingleHostCompatibleOtherwise) {
  const auto plain = classify_source("import jax\nimport jax.numpy as jnp\nprint(jnp.ones(3).sum())\n");
  ASSERT_TRUE(plain.suggested.has_value());
  EXPECT_EQ(*plain.suggested, ScriptClass::single_host_compatible);
  EXPECT_EQ(plain.why, "no cpu selection and no multi-host markers");

  const auto backend = classify_source("import jax\nassert jax.default_backend() == 'tpu'\n");
  ASSERT_TRUE(backend.suggested.has_value());
  EXPECT_EQ(*backend.suggested, ScriptClass::single_host_compatible);
  EXPECT_EQ(backend.why, "checks for a TPU backend at line 2 with no cpu selection and no jax.distributed.initialize()");

  const auto pmap = classify_source("import jax\ny = jax.pmap(lambda x: jax.lax.psum(x, 'i'), axis_name='i')(x)\n");
  ASSERT_TRUE(pmap.suggested.has_value());
  EXPECT_EQ(*pmap.suggested, ScriptClass::single_host_compatible);
  EXPECT_EQ(pmap.why, "no cpu selection and no jax.distributed.initialize(): its multi-host markers run on one host");
}

TEST(Classifier, NoSuggestionForSourceThatIsNotPython) {
  const auto c = classify_source("import jax\nx = '''never closed\njax.devices('cpu')\n");
  EXPECT_FALSE(c.suggested.has_value());
  ASSERT_TRUE(c.lex_error.has_value());
  EXPECT_EQ(c.why.rfind("the source is not valid Python at line 2, column 5", 0), 0U) << c.why;
}

// ---- values held in names, and the forms issue 14 found missing ------------------------------

// `code` as text only: in comments, a string and a docstring.
std::string as_text_only(std::string_view code) {
  std::string commented;
  std::size_t start = 0;
  while (start < code.size()) {
    const auto end = code.find('\n', start);
    commented += "# " + std::string(code.substr(start, end - start)) + "\n";
    start = end == std::string_view::npos ? code.size() : end + 1;
  }
  return "import jax, os\n" + commented + "s = '''" + std::string(code) + "'''\ndef f():\n    \"\"\"" +
         std::string(code) + "\"\"\"\n";
}

struct Form {
  std::string_view code;
  std::string_view rule;
};

const Form k_missed_forms[] = {
    {"import jax\nPLAT = 'cpu'\njax.devices(PLAT)\n", "devices-cpu"},
    {"import jax\nPLAT = \"cpu\"\nf = jax.jit(g, backend=PLAT)\n", "backend-cpu-kwarg"},
    {"import jax\nPLAT: str = 'cpu'\njax.local_devices(backend=PLAT)\n", "local-devices-cpu"},
    {"import os\nPLAT = 'cpu'\nos.environ['JAX_PLATFORMS'] = PLAT\n", "env-platforms-cpu"},
    {"import os\nPLAT = 'cpu'\nos.environ.setdefault('JAX_PLATFORMS', PLAT)\n", "env-platforms-cpu"},
    {"import jax\nPLAT = 'cpu'\njax.config.update('jax_platforms', PLAT)\n", "config-platforms-cpu"},
    {"import jax\nPLAT = 'cpu'\njax.config.update(name='jax_platforms', val=PLAT)\n", "config-platforms-cpu"},
    {"import jax\njax.config.update(name=\"jax_platforms\", val=\"cpu\")\n", "config-platforms-cpu"},
    {"import jax\njax.config.update(val='cpu', name='jax_platform_name')\n", "config-platforms-cpu"},
    {"from jax.lib import xla_bridge\nb = xla_bridge.get_backend(\"cpu\")\n", "get-backend-cpu"},
    {"import jax\nb = jax.lib.xla_bridge.get_backend(platform='cpu')\n", "get-backend-cpu"},
    {"import jax.extend\nb = jax.extend.backend.get_backend('cpu')\n", "get-backend-cpu"},
    {"from jax.extend import backend\nb = backend.get_backend('cpu')\n", "get-backend-cpu"},
    {"import os\nos.environ |= {\"JAX_PLATFORMS\": \"cpu\"}\n", "env-platforms-cpu"},
    {"from os import environ\nenviron |= {'JAX_PLATFORM_NAME': 'cpu'}\n", "env-platforms-cpu"},
    {"import os\nPLAT = 'cpu'\nos.environ |= {'JAX_PLATFORMS': PLAT}\n", "env-platforms-cpu"},
    {"import os\nos.environ |= dict(JAX_PLATFORMS='cpu')\n", "env-platforms-cpu"},
    {"import os\nFLAGS = '--xla_force_host_platform_device_count=8'\nos.environ['XLA_FLAGS'] = FLAGS\n",
     "xla-force-host-devices"},
    // A name bound once to another such name, and a use above the binding (file-wide, not ordered).
    {"import jax\nCPU = 'cpu'\nPLAT = CPU\njax.devices(PLAT)\n", "devices-cpu"},
    {"import jax\ndef run():\n    return jax.devices(PLAT)\nPLAT = 'cpu'\n", "devices-cpu"},
};

TEST(Classifier, EachMissedFormIsEvidence) {
  for (const auto& form : k_missed_forms) {
    const auto c = classify_source(form.code);
    EXPECT_TRUE(has_id(c, form.rule)) << form.code;
    EXPECT_FALSE(has_id(c, "platform-unresolved")) << form.code;
    ASSERT_TRUE(c.suggested.has_value()) << form.code;
    EXPECT_EQ(*c.suggested, ScriptClass::cpu_only) << form.code;
  }
}

TEST(Classifier, EachMissedFormAsTextOnlyIsNoEvidence) {
  for (const auto& form : k_missed_forms) {
    const std::string text = as_text_only(form.code);
    const auto c = classify_source(text);
    EXPECT_TRUE(c.evidence.empty()) << text << (c.evidence.empty() ? "" : to_string(c.evidence[0].rule));
    ASSERT_TRUE(c.suggested.has_value()) << text;
    EXPECT_EQ(*c.suggested, ScriptClass::single_host_compatible);
  }
}

TEST(Classifier, NameBoundToAnotherPlatformIsNotEvidence) {
  EXPECT_TRUE(rules("import jax\nPLAT = 'tpu'\njax.devices(PLAT)\nf = jax.jit(g, backend=PLAT)\n").empty());
  EXPECT_TRUE(rules("import os\nPLAT = 'tpu'\nos.environ['JAX_PLATFORMS'] = PLAT\n").empty());
  EXPECT_TRUE(rules("import os\nos.environ |= {'OTHER': 'cpu'}\nos.environ.update(A='1', B='2')\n").empty());
  EXPECT_TRUE(
      rules("from jax.extend import backend\nb = backend.get_backend()\nc = backend.get_backend('tpu')\n").empty());
}

TEST(Classifier, ReboundNameIsAPossibleSelection) {
  const std::string_view sources[] = {
      "import jax\nPLAT = 'tpu'\nPLAT = 'cpu'\njax.devices(PLAT)\n",
      "import jax\nPLAT = 'tpu'\nif cpu:\n    PLAT = 'cpu'\njax.devices(PLAT)\n",
      "import jax\nPLAT = 'tpu'\nfor PLAT in ('cpu',):\n    jax.devices(PLAT)\n",
      "import jax\nPLAT = 'tpu'\ndef f(PLAT='cpu'):\n    return jax.devices(PLAT)\n",
      "import jax\nPLAT = 'tpu'\nPLAT += ''\njax.devices(PLAT)\n",
      "import jax\nPLAT = 'tpu'\nPLAT, other = 'cpu', 1\njax.devices(PLAT)\n",
      "import jax\nPLAT = 'tpu'\nif (PLAT := 'cpu'):\n    jax.devices(PLAT)\n",
      "import jax\nPLAT = 'tpu'\nwith ctx() as PLAT:\n    jax.devices(PLAT)\n",
      "import jax\nfrom settings import *\nPLAT = 'tpu'\njax.devices(PLAT)\n",
      "import jax\nPLAT = os.environ.get('PLATFORM', 'tpu')\njax.devices(PLAT)\n",
      "import jax\njax.devices(args.platform)\n",
      "import jax\njax.devices(get_platform())\n",
      "import jax\njax.devices(f'{PLAT}')\n",
      "import os\nos.environ['JAX_PLATFORMS'] = 'cpu' if args.cpu else 'tpu'\n",
      "import os\nos.environ.update(cfg)\n",
      "import os\nos.environ.update(**cfg)\n",
      "import os\nos.environ |= {**cfg}\n",
      "import jax\njax.config.update('jax_platforms', platform)\n",
  };
  for (const auto source : sources) {
    const auto c = classify_source(source);
    EXPECT_TRUE(has_id(c, "platform-unresolved")) << source;
    EXPECT_TRUE(c.has_category(Category::cpu_selection)) << source;
    EXPECT_FALSE(c.suggested.has_value()) << source;
    EXPECT_EQ(c.why.rfind("may select CPU devices at line", 0), 0U) << c.why;
  }
  const auto c = classify_source(sources[0]);
  ASSERT_EQ(c.evidence.size(), 1U);
  EXPECT_EQ(c.evidence[0].line, 4U);
  EXPECT_EQ(c.evidence[0].detail,
            "the backend of jax.devices() is the name 'PLAT', whose value is unknown: 'PLAT' is bound 2 times "
            "(lines 2, 3)");
}

TEST(Classifier, UnknownValueWithCertainCpuSelectionStillSuggestsCpuOnly) {
  const auto c = classify_source("import jax\njax.devices(kind)\njax.devices('cpu')\n");
  EXPECT_TRUE(has_id(c, "platform-unresolved"));
  ASSERT_TRUE(c.suggested.has_value());
  EXPECT_EQ(*c.suggested, ScriptClass::cpu_only);
}

TEST(Classifier, PastTheBracketLimitFailsClosed) {
  const std::string source =
      "import jax\nx = " + std::string(5000, '(') + "jax.devices('cpu')" + std::string(5000, ')') + "\n";
  const auto c = classify_source(source);
  EXPECT_TRUE(has_id(c, "source-unreadable"));
  EXPECT_FALSE(c.suggested.has_value());
  const Evidence* row = first(c, "source-unreadable");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->line, 2U);
  EXPECT_EQ(row->detail, "brackets nested deeper than 4096");
}

TEST(Classifier, TokenizerErrorIsEvidenceAtItsPosition) {
  const auto c = classify_source("import jax\nx = 1\ny = 'never closed\nz = 2\n");
  const Evidence* row = first(c, "source-unreadable");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->line, 3U);
  EXPECT_EQ(row->column, 5U);
  EXPECT_EQ(row->text, "y = 'never closed");
  EXPECT_EQ(row->detail, "unterminated string literal");
  EXPECT_EQ(row->category, Category::cpu_selection);
  EXPECT_FALSE(c.suggested.has_value());
}

TEST(Classifier, ArgumentsPastTheCaptureLimitFailClosed) {
  std::string source = "import jax\njax.devices(";
  for (int i = 0; i < 40000; ++i) {
    source += "a, ";
  }
  source += "'cpu')\n";
  EXPECT_TRUE(has_id(classify_source(source), "platform-unresolved"));
}

TEST(Classifier, EveryArgumentOfAnEnvUpdateIsRead) {
  std::string source = "import os\nos.environ.update(";
  for (int i = 0; i < 12; ++i) {
    source += "K" + std::to_string(i) + "='1', ";
  }
  source += "JAX_PLATFORMS='cpu')\n";
  EXPECT_EQ(rules(source), Strings{"env-platforms-cpu"});
}

// ---- platform names where a device goes (issue 23) -------------------------------------------

// JAX takes a platform name where a device goes: jax.default_device('cpu'), the
// jax_default_device option, and its environment variable JAX_DEFAULT_DEVICE.
TEST(Classifier, PlatformNameWhereADeviceGoes) {
  const Form forms[] = {
      {"import jax\nwith jax.default_device('cpu'):\n    pass\n", "default-device-cpu"},
      {"import jax\nctx = jax.default_device(new_val=\"CPU\")\n", "default-device-cpu"},
      {"from jax import default_device\nwith default_device('cpu'):\n    pass\n", "default-device-cpu"},
      {"import jax\nDEV = 'cpu'\nwith jax.default_device(DEV):\n    pass\n", "default-device-cpu"},
      {"import jax\njax.config.update('jax_default_device', 'cpu')\n", "config-default-device-cpu"},
      {"from jax import config\nconfig.update(name='jax_default_device', val='cpu')\n", "config-default-device-cpu"},
      {"import jax\ncpu = jax.devices('cpu')[0]\njax.config.update('jax_default_device', cpu)\n",
       "config-default-device-cpu"},
      {"import jax\njax.config.update('jax_default_device', jax.local_devices(backend='cpu')[0])\n",
       "config-default-device-cpu"},
      {"import os\nos.environ['JAX_DEFAULT_DEVICE'] = 'cpu'\n", "env-default-device-cpu"},
      {"import os\nos.environ.setdefault('JAX_DEFAULT_DEVICE', 'cpu')\n", "env-default-device-cpu"},
      {"import os\nos.environ.update({'JAX_DEFAULT_DEVICE': 'cpu'})\n", "env-default-device-cpu"},
      {"import os\nos.environ.update(JAX_DEFAULT_DEVICE='cpu')\n", "env-default-device-cpu"},
      {"import os\nos.putenv('JAX_DEFAULT_DEVICE', 'cpu')\n", "env-default-device-cpu"},
      {"import os\nos.environ |= {'JAX_DEFAULT_DEVICE': 'cpu'}\n", "env-default-device-cpu"},
      {"import os\nDEV = 'cpu'\nos.environ['JAX_DEFAULT_DEVICE'] = DEV\n", "env-default-device-cpu"},
  };
  for (const auto& form : forms) {
    const auto c = classify_source(form.code);
    EXPECT_TRUE(has_id(c, form.rule)) << form.code;
    EXPECT_FALSE(has_id(c, "platform-unresolved")) << form.code;
    ASSERT_TRUE(c.suggested.has_value()) << form.code;
    EXPECT_EQ(*c.suggested, ScriptClass::cpu_only) << form.code;
    EXPECT_TRUE(classify_source(as_text_only(form.code)).evidence.empty()) << form.code;
  }
}

TEST(Classifier, PlatformNameWhereADeviceGoesNearMisses) {
  const std::string_view sources[] = {
      "import jax\nwith jax.default_device('tpu'):\n    pass\n",
      "import jax\nwith jax.default_device(None):\n    pass\n",
      "import jax\nwith jax.default_device(jax.devices()[0]):\n    pass\n",
      "import jax\nd = jax.local_devices()[1]\nwith jax.default_device(d):\n    pass\n",
      "import jax\nfor d in jax.devices():\n    with jax.default_device(d):\n        pass\n",
      "import jax\njax.config.update('jax_default_device', 'tpu')\n",
      "import jax\njax.config.update('jax_default_device', jax.devices()[0])\n",
      "import os\nos.environ['JAX_DEFAULT_DEVICE'] = 'tpu'\n",
      "import os\nprint('JAX_DEFAULT_DEVICE=cpu')\nx = os.environ.get('JAX_DEFAULT_DEVICE', 'cpu')\n",
  };
  for (const auto source : sources) {
    EXPECT_TRUE(rules(source).empty()) << source;
  }
  // A loop over CPU devices names CPU devices.
  EXPECT_EQ(rules("import jax\nfor d in jax.devices('cpu'):\n    with jax.default_device(d):\n        pass\n"),
            (Strings{"devices-cpu", "default-device-cpu"}));
}

// ---- what the classifier cannot resolve fails closed (issue 23) ----------------------------------

TEST(Classifier, UnresolvableEvidenceIsAnUndecidedRow) {
  const struct {
    std::string_view code;
    std::string_view detail;
  } cases[] = {
      // Keys it cannot follow into os.environ[...] and the other key forms.
      {"import os\nos.environ[KEY] = 'cpu'\n",
       "the key of os.environ[...] is the name 'KEY', whose value is unknown: 'KEY' is not assigned in this file"},
      {"import os\nfor k, v in cfg.items():\n    os.environ[k] = v\n",
       "the key of os.environ[...] is the name 'k', whose value is unknown: 'k' is bound at line 2 by a parameter, a loop, an import or "
       "the like"},
      {"import os\nos.environ[prefix + 'PLATFORMS'] = 'cpu'\n",
       "the key of os.environ[...] is `prefix + 'PLATFORMS'`, not a string literal"},
      {"import os\nos.environ[f'JAX_{x}'] = 'cpu'\n", "the key of os.environ[...] is `f'JAX_{x}'`, not a string literal"},
      {"import os\nos.environ.setdefault(key, 'cpu')\n",
       "the key of os.environ.setdefault() is the name 'key', whose value is unknown: 'key' is not assigned in this "
       "file"},
      {"import os\ndef f(name, value):\n    os.putenv(name, value)\n",
       "the key of os.putenv() is the name 'name', whose value is unknown: 'name' is bound at line 2 by a parameter, a "
       "loop, an import or the like"},
      {"import jax\njax.config.update(flag.name, True)\n",
       "the key of jax.config.update() is `flag.name`, not a string literal"},
      {"import os\nos.environ.update({key: 'cpu'})\n",
       "the key of an os.environ mapping is the name 'key', whose value is unknown: 'key' is not assigned in this file"},
      // A computed call.
      {"import jax\ngetattr(jax, name)('cpu')\n",
       "getattr() picks an attribute of jax by the value of `name`, only known at run time"},
      {"import jax\nfn = getattr(jax, 'devices')\nfn('cpu')\n",
       "getattr() reaches jax.devices by name, a call the classifier does not read"},
      {"import jax as jx\ngetattr(jx.config, 'update')('jax_platforms', 'cpu')\n",
       "getattr() reaches jax.config.update by name, a call the classifier does not read"},
      {"from os import environ\ngetattr(environ, op)('JAX_PLATFORMS', 'cpu')\n",
       "getattr() picks an attribute of os.environ by the value of `op`, only known at run time"},
      // A device or platform given as a value it cannot resolve.
      {"import jax\ndef run(device):\n    with jax.default_device(device):\n        pass\n",
       "the device of jax.default_device() is the name 'device', whose value is unknown: 'device' is bound at line 2 "
       "by a parameter, a loop, an import or the like"},
      {"import jax\nwith jax.default_device(mesh.devices.flat[0]):\n    pass\n",
       "the device of jax.default_device() is `mesh.devices.flat[0]`, not a string literal"},
      {"import jax\njax.config.update('jax_default_device', args.device)\n",
       "the value of jax_default_device is `args.device`, not a string literal"},
      {"import os\nos.environ['JAX_DEFAULT_DEVICE'] = args.device\n",
       "the value of JAX_DEFAULT_DEVICE is `args.device`, not a string literal"},
  };
  for (const auto& c : cases) {
    const auto result = classify_source(c.code);
    const Evidence* row = first(result, "platform-unresolved");
    ASSERT_NE(row, nullptr) << c.code;
    EXPECT_EQ(row->detail, c.detail) << c.code;
    EXPECT_EQ(row->category, Category::cpu_selection) << c.code;
    EXPECT_TRUE(is_undecided(*row));
    EXPECT_FALSE(result.suggested.has_value()) << c.code; // the script fails closed: a reviewer decides
    EXPECT_EQ(result.why.rfind("may select CPU devices at line", 0), 0U) << result.why;
  }
}

TEST(Classifier, KeysHeldInNamesAreFollowed) {
  const Form forms[] = {
      {"import os\nKEY = 'JAX_PLATFORMS'\nos.environ[KEY] = 'cpu'\n", "env-platforms-cpu"},
      {"import os\nKEY = 'JAX_PLATFORMS'\nVALUE = 'cpu'\nos.environ[KEY] = VALUE\n", "env-platforms-cpu"},
      {"import os\ndef setup():\n    os.environ.setdefault(KEY, 'cpu')\nKEY = 'JAX_PLATFORM_NAME'\n", "env-platforms-cpu"},
      {"import os\nKEY = 'JAX_DEFAULT_DEVICE'\nos.environ.update({KEY: 'cpu'})\n", "env-default-device-cpu"},
      {"import jax\nOPT = 'jax_platforms'\njax.config.update(OPT, 'cpu')\n", "config-platforms-cpu"},
      {"import jax\nOPT = 'jax_default_device'\njax.config.update(OPT, jax.devices('cpu')[0])\n",
       "config-default-device-cpu"},
      {"import os\nKEY = 'XLA_FLAGS'\nos.environ[KEY] += ' --xla_force_host_platform_device_count=8'\n",
       "xla-force-host-devices"},
  };
  for (const auto& form : forms) {
    const auto c = classify_source(form.code);
    EXPECT_TRUE(has_id(c, form.rule)) << form.code;
    EXPECT_FALSE(has_id(c, "platform-unresolved")) << form.code;
  }
  const std::string_view near_misses[] = {
      "import os\nKEY = 'HOME'\nos.environ[KEY] = 'cpu'\n",
      "import os\nKEY = 'JAX_PLATFORMS'\nos.environ[KEY] = 'tpu'\n",
      "import os\nKEY = 'JAX_PLATFORMS'\nos.environ[KEY] += ',cpu'\n", // `+=` only appends a platform
      "import os\nos.environ['HOME'] = os.environ[user]\nsettings[key] = 'cpu'\n",
      "import jax\nv = getattr(jax, '__version__')\nf = getattr(jax.numpy, name)\ng = getattr(obj, name)('cpu')\n",
      "import jax\nh = getattr(jax.lax, name)\n",
  };
  for (const auto source : near_misses) {
    EXPECT_TRUE(rules(source).empty()) << source;
  }
}

// ---- source encodings (PEP 263) ----------------------------------------------------------------

TEST(Classifier, DeclaredLatin1SourceIsReadAsPythonReadsIt) {
  // 0xe9 is 'é' in Latin-1: the evidence text is the UTF-8 of what Python reads, and the column
  // counts its UTF-8 bytes (as Python's ast does).
  const auto c = classify_source("# -*- coding: latin-1 -*-\nimport jax\nd = '\xe9'; jax.devices('cpu')\n");
  EXPECT_FALSE(c.lex_error.has_value());
  ASSERT_EQ(c.evidence.size(), 1U);
  EXPECT_EQ(to_string(c.evidence[0].rule), "devices-cpu");
  EXPECT_EQ(c.evidence[0].line, 3U);
  EXPECT_EQ(c.evidence[0].column, 11U); // 10 in the file's own bytes
  EXPECT_EQ(c.evidence[0].text, "d = '\xc3\xa9'; jax.devices('cpu')");
  // cp1252's quotation mark byte (0x93) in a string, with the vim form of the declaration on line 2.
  EXPECT_EQ(rules("#!/usr/bin/env python3\n# vim: set fileencoding=cp1252 :\nimport jax\ns = '\x93'\n"
                  "jax.devices('cpu')\n"),
            Strings{"devices-cpu"});
}

// ---- tables and robustness ---------------------------------------------------------------

TEST(Classifier, RuleTableIdsAreUniqueKebabCase) {
  std::set<std::string_view> ids;
  for (const auto& rule : classifier_rules()) {
    EXPECT_TRUE(ids.insert(rule.id).second) << rule.id;
    for (char c : rule.id) {
      EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '-') << rule.id;
    }
    EXPECT_FALSE(rule.pattern.empty());
    EXPECT_FALSE(rule.implies.empty());
    EXPECT_EQ(find_classifier_rule(rule.id), &rule);
    EXPECT_EQ(&classifier_rule(rule.rule), &rule); // the row of each Rule is its own
    EXPECT_EQ(to_string(rule.rule), rule.id);
  }
  for (std::string_view id :
       {"devices-cpu", "local-devices-cpu", "default-device-cpu", "backend-cpu-kwarg", "config-platforms-cpu",
        "env-platforms-cpu", "xla-force-host-devices", "num-cpu-devices", "distributed-initialize", "process-index",
        "process-count", "collective", "global-barrier", "result-check", "backend-is-tpu"}) {
    EXPECT_TRUE(ids.count(id) == 1) << id;
  }
  EXPECT_EQ(find_classifier_rule("no-such-rule"), nullptr);
  for (const auto& marker : multi_host_markers()) {
    EXPECT_FALSE(marker.rules.empty()) << marker.name;
  }
  EXPECT_EQ(multi_host_markers()[0].marker, Marker::initialize);
}

TEST(Classifier, CategoryNames) {
  EXPECT_EQ(to_string(Category::cpu_selection), "cpu-selection");
  EXPECT_EQ(to_string(Category::multi_host), "multi-host");
  EXPECT_EQ(to_string(Category::backend_assertion), "backend-assertion");
}

TEST(Classifier, UnclosedCallDoesNotCrashOrMatch) {
  const auto c = classify_source("import jax\njax.devices('cpu'\n");
  EXPECT_FALSE(has_id(c, "devices-cpu"));
  EXPECT_TRUE(c.lex_error.has_value());
}

TEST(Classifier, RandomGarbageNeverCrashes) {
  std::mt19937 rng(99);
  const std::string_view pieces[] = {"jax",
                                     ".",
                                     "devices",
                                     "(",
                                     ")",
                                     "'cpu'",
                                     "=",
                                     "os",
                                     "environ",
                                     "[",
                                     "]",
                                     "'JAX_PLATFORMS'",
                                     ",",
                                     "backend",
                                     "\n",
                                     "import",
                                     "from",
                                     "as",
                                     "==",
                                     "'tpu'",
                                     "platform",
                                     "{",
                                     "}",
                                     ":",
                                     "assert",
                                     "\"",
                                     "f'{",
                                     "\\\n",
                                     "#",
                                     "lax",
                                     "psum",
                                     "def",
                                     "lambda",
                                     "getattr",
                                     "distributed",
                                     "initialize",
                                     "print",
                                     "if",
                                     "for",
                                     "in",
                                     "shape",
                                     "    ",
                                     "# -*- coding: latin-1 -*-\n",
                                     "\xe9",
                                     "default_device",
                                     "JAX_DEFAULT_DEVICE",
                                     "and",
                                     "else",
                                     "__name__",
                                     "'__main__'",
                                     "importlib",
                                     "import_module",
                                     "exec",
                                     "open",
                                     "read",
                                     "runpy",
                                     "run_path",
                                     "subprocess",
                                     "run",
                                     "'JAX_PLATFORMS=cpu'",
                                     "f'{jax.devices(\"cpu\")}'",
                                     "env",
                                     "__file__",
                                     "Path",
                                     "/",
                                     "'x.py'"};
  for (int round = 0; round < 3000; ++round) {
    std::string source;
    const auto count = rng() % 60;
    for (unsigned i = 0; i < count; ++i) {
      source += pieces[rng() % std::size(pieces)];
      source += rng() % 3 == 0 ? " " : "";
    }
    const auto c = classify_source(source);
    for (const auto& e : c.evidence) {
      ASSERT_NE(find_classifier_rule(to_string(e.rule)), nullptr);
      ASSERT_GE(e.line, 1U);
    }
  }
}

TEST(Classifier, DeepNestingIsBounded) {
  std::string source = "import jax\nx = " + std::string(10000, '(') + "jax.devices('cpu')" + std::string(10000, ')') +
                       "\njax.process_index()\n";
  const auto c = classify_source(source);
  EXPECT_TRUE(has_id(c, "process-index"));
  EXPECT_TRUE(has_id(c, "source-unreadable")); // what is nested past the limit is not seen: fail closed
}

// ---- code that arrives by other doors (issue 35 §1) -----------------------------------------

// One form of loading code, with what the classifier makes of it: its rows, the modules it hands
// the lesson reader (as "level:module:names:call") and the files ("path" or "./path" when relative
// to the loading file's folder).
struct LoadCase {
  std::string_view source;
  Strings rules;
  Strings modules;
  Strings files;
};

Strings loaded_modules(const Classification& c) {
  Strings out;
  for (const auto& m : c.imports) {
    if (m.call.empty()) {
      continue; // the import statements of the cases' preambles
    }
    std::string names;
    for (const auto& n : m.names) {
      names += (names.empty() ? "" : ",") + n;
    }
    out.push_back(std::to_string(m.level) + ":" + m.module + ":" + names + ":" + m.call);
  }
  return out;
}

Strings loaded_files(const Classification& c) {
  Strings out;
  for (const auto& f : c.loaded_files) {
    out.push_back((f.from_file_folder ? "./" : "") + f.path);
  }
  return out;
}

// The corpus of the forms docs/matrix.md lists: each followed (a module or a file handed on), or an
// import-unresolved row. fuzz/corpus/python/loads-*.py hold the same forms for the fuzzer.
const LoadCase k_load_cases[] = {
    // importlib.import_module, every way of naming the module
    {"import importlib\nm = importlib.import_module('common.backends')\n",
     {},
     {"0:common.backends::importlib.import_module()"},
     {}},
    {"from importlib import import_module\nm = import_module(\"common.backends\")\n",
     {},
     {"0:common.backends::importlib.import_module()"},
     {}},
    {"import importlib as il\nm = il.import_module('.backends', package='common')\n",
     {},
     {"0:common.backends::importlib.import_module()"},
     {}},
    {"import importlib\nm = importlib.import_module('..x', 'a.b')\n", {}, {"0:a.x::importlib.import_module()"}, {}},
    {"import importlib\nm = importlib.import_module('.backends', __package__)\n",
     {},
     {"1:backends::importlib.import_module()"},
     {}},
    {"import importlib\nm = importlib.import_module(name)\n", {"import-unresolved"}, {}, {}},
    {"import importlib\nm = importlib.import_module(f'common.{name}')\n", {"import-unresolved"}, {}, {}},
    {"import importlib\nm = importlib.import_module('.x', package=pkg)\n", {"import-unresolved"}, {}, {}},
    {"import importlib\nm = importlib.import_module('...x', 'a')\n", {"import-unresolved"}, {}, {}},
    {"import importlib\nm = importlib.import_module('common/backends')\n", {"import-unresolved"}, {}, {}},
    // __import__
    {"m = __import__('common.backends')\n", {}, {"0:common.backends::__import__()"}, {}},
    {"m = __import__('common', fromlist=['backends'])\n", {}, {"0:common:backends:__import__()"}, {}},
    {"m = __import__('backends', globals(), locals(), ['x'], 1)\n", {}, {"1:backends:x:__import__()"}, {}},
    {"import importlib\nm = importlib.__import__('common.cfg')\n", {}, {"0:common.cfg::importlib.__import__()"}, {}},
    {"m = __import__(mod)\n", {"import-unresolved"}, {}, {}},
    {"m = __import__('common', fromlist=names)\n", {"import-unresolved"}, {}, {}},
    {"m = __import__('common', None, None, [], level)\n", {"import-unresolved"}, {}, {}},
    // runpy
    {"import runpy\nrunpy.run_module('common.setup')\n", {}, {"0:common.setup:__main__:runpy.run_module()"}, {}},
    {"import runpy\nrunpy.run_module(mod_name=m)\n", {"import-unresolved"}, {}, {}},
    {"import runpy\nrunpy.run_path('common/setup.py')\n", {"import-unresolved"}, {}, {"common/setup.py"}},
    {"from runpy import run_path\nrun_path(path_name='setup.py')\n", {"import-unresolved"}, {}, {"setup.py"}},
    {"import runpy\nrunpy.run_path(path)\n", {"import-unresolved"}, {}, {}},
    {"import os, runpy\nrunpy.run_path(os.path.join(os.path.dirname(__file__), 'common', 'setup.py'))\n",
     {"import-unresolved"},
     {},
     {"./common/setup.py"}},
    {"import runpy\nfrom pathlib import Path\nrunpy.run_path(str(Path(__file__).resolve().parent / 'setup.py'))\n",
     {"import-unresolved"},
     {},
     {"./setup.py"}},
    // exec and eval of a file read whole, or of a string
    {"exec(open('common/cpu.py').read())\n", {"import-unresolved"}, {}, {"common/cpu.py"}},
    {"exec(open('common/cpu.py', 'r', encoding='utf-8').read())\n", {"import-unresolved"}, {}, {"common/cpu.py"}},
    {"exec(compile(open('cpu.py').read(), 'cpu.py', 'exec'))\n", {"import-unresolved"}, {}, {"cpu.py"}},
    {"from pathlib import Path\nexec(Path('cpu.py').read_text())\n", {"import-unresolved"}, {}, {"cpu.py"}},
    {"import pathlib\nexec(pathlib.Path(__file__).with_name('cpu.py').read_text())\n",
     {"import-unresolved"},
     {},
     {"./cpu.py"}},
    {"exec(code)\n", {"import-unresolved"}, {}, {}},
    {"with open('cpu.py') as f:\n    exec(f.read())\n", {"import-unresolved"}, {}, {}},
    {"eval(expression)\n", {"import-unresolved"}, {}, {}},
    {"exec(\"import jax\\njax.config.update('jax_platforms', 'cpu')\")\n",
     {"config-platforms-cpu"},
     {"0:jax::the code exec() runs"},
     {}},
    {"exec(\"import importlib\\nimportlib.import_module('common.cpu')\")\n",
     {},
     {"0:importlib::the code exec() runs", "0:common.cpu::importlib.import_module()"},
     {}},
    {"x = eval('1 + 2')\n", {}, {}, {}},
    {"exec('jax.devices(')\n", {"source-unreadable"}, {}, {}},
    // importlib.util and importlib.machinery, imp
    {"import importlib.util\ns = importlib.util.spec_from_file_location('cfg', 'common/cfg.py')\n",
     {"import-unresolved"},
     {},
     {"common/cfg.py"}},
    {"from importlib.util import spec_from_file_location as sf\ns = sf('cfg', location=p)\n",
     {"import-unresolved"},
     {},
     {}},
    {"import importlib.machinery\nm = importlib.machinery.SourceFileLoader('cfg', 'cfg.py').load_module()\n",
     {"import-unresolved"},
     {},
     {"cfg.py"}},
    {"import imp\nm = imp.load_source('cfg', 'cfg.py')\n", {"import-unresolved"}, {}, {"cfg.py"}},
    // a loader handed on as a value, or reached by name
    {"import importlib, functools\nload = functools.partial(importlib.import_module, package='common')\n",
     {"import-unresolved"},
     {},
     {}},
    {"import importlib\nm = getattr(importlib, 'import_module')('common.backends')\n", {"platform-unresolved"}, {}, {}},
    // not code the script loads
    {"import importlib\nimportlib.reload(m)\n", {}, {}, {}},
    {"s = 'importlib.import_module(\"common.backends\")'  # exec(open('x.py').read())\n", {}, {}, {}},
    {"model.eval()\nself.exec(query)\n", {}, {}, {}},
    // a function of the file's own that shadows the builtin
    {"def eval(model):\n    return model\n\n\nscore = eval(net)\n", {}, {}, {}},
    {"from tools import exec\nexec(job)\n", {}, {}, {}},
};

TEST(ClassifierLoads, EveryFormIsFollowedOrUndecided) {
  for (const LoadCase& load : k_load_cases) {
    const auto c = classify_source(load.source);
    EXPECT_EQ(rules(load.source), load.rules) << load.source;
    EXPECT_EQ(loaded_modules(c), load.modules) << load.source;
    EXPECT_EQ(loaded_files(c), load.files) << load.source;
    // Never a confident class over code the classifier could not read.
    if (std::find(load.rules.begin(), load.rules.end(), "import-unresolved") != load.rules.end()) {
      EXPECT_FALSE(c.suggested.has_value()) << load.source;
    }
  }
}

TEST(ClassifierLoads, AnUnresolvedLoadNamesTheCallAndItsLine) {
  const auto c = classify_source("import importlib\n\nbackend = importlib.import_module(NAME)\n");
  const Evidence* row = first(c, "import-unresolved");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->line, 3U);
  EXPECT_EQ(row->column, 11U);
  EXPECT_EQ(row->detail, "importlib.import_module() is given `NAME`, not a string literal: which module it loads is "
                         "only known at run time");
  EXPECT_EQ(c.why, "may select CPU devices at line 3 (import-unresolved: " + row->detail + "); a reviewer must decide");
  const auto e = classify_source("exec(src, {})\n");
  ASSERT_NE(first(e, "import-unresolved"), nullptr);
  EXPECT_EQ(first(e, "import-unresolved")->detail, "exec() runs `src`: code the classifier cannot read");
}

// ---- CPU selection wherever it sits, and wherever it is handed on (issue 35 §1) ---------------

struct PlacementCase {
  std::string_view name;
  std::string_view source;
  Strings rules;
};

// Each known CPU selection in an unusual place, and each way of handing a CPU platform to a
// program the script starts, with the row it must give.
const PlacementCase k_placements[] = {
    {"function body", "import jax\ndef f():\n    return jax.devices('cpu')\n", {"devices-cpu"}},
    {"nested function",
     "import jax\ndef f():\n    def g():\n        jax.config.update('jax_platforms', 'cpu')\n    return g\n",
     {"config-platforms-cpu"}},
    {"method",
     "import jax\nclass A:\n    def run(self):\n        return jax.local_devices(backend='cpu')\n",
     {"local-devices-cpu"}},
    {"class body", "import os\nclass A:\n    os.environ['JAX_PLATFORMS'] = 'cpu'\n", {"env-platforms-cpu"}},
    {"lambda", "import jax\nf = lambda: jax.devices('cpu')\n", {"devices-cpu"}},
    {"lambda default", "import jax\nf = lambda d=jax.devices('cpu'): d\n", {"devices-cpu"}},
    {"list comprehension", "import jax\nx = [jax.devices('cpu') for _ in range(2)]\n", {"devices-cpu"}},
    {"comprehension condition", "import jax\nx = [d for d in ds if d in jax.devices('cpu')]\n", {"devices-cpu"}},
    {"dict comprehension", "import jax\nx = {k: jax.devices('cpu') for k in ks}\n", {"devices-cpu"}},
    {"generator", "import jax\nx = sum(1 for _ in jax.devices('cpu'))\n", {"devices-cpu"}},
    {"conditional expression", "import jax\nd = jax.devices('cpu') if flag else jax.devices()\n", {"devices-cpu"}},
    {"boolean operand",
     "import jax\nok = flag or jax.config.update('jax_platforms', 'cpu')\n",
     {"config-platforms-cpu"}},
    {"decorator",
     "import jax, functools\n@functools.partial(jax.jit, backend='cpu')\ndef f(x):\n    return x\n",
     {"backend-cpu-kwarg"}},
    {"decorator argument", "import jax\n@on_device(jax.devices('cpu')[0])\ndef f(x):\n    return x\n", {"devices-cpu"}},
    {"with item",
     "import jax\nwith jax.default_device(jax.devices('cpu')[0]) as d:\n    pass\n",
     {"default-device-cpu", "devices-cpu"}},
    {"async with",
     "import jax\nasync def f():\n    async with lock:\n        jax.config.update('jax_platform_name', 'cpu')\n",
     {"config-platforms-cpu"}},
    {"call argument", "import jax\nprint(len(list(jax.devices('cpu'))))\n", {"devices-cpu"}},
    {"keyword argument", "import jax\nrun(devices=jax.devices('cpu'))\n", {"devices-cpu"}},
    {"default parameter", "import jax\ndef f(d=jax.devices('cpu')):\n    return d\n", {"devices-cpu"}},
    {"annotated assignment", "import jax\nd: list = jax.devices('cpu')\n", {"devices-cpu"}},
    {"subscript", "import jax\nx = table[jax.devices('cpu')[0]]\n", {"devices-cpu"}},
    {"walrus", "import jax\nif (d := jax.devices('cpu')):\n    pass\n", {"devices-cpu"}},
    {"starred", "import jax\nprint(*jax.devices('cpu'))\n", {"devices-cpu"}},
    {"yield", "import jax\ndef g():\n    yield jax.devices('cpu')\n", {"devices-cpu"}},
    {"assert", "import jax\nassert jax.devices('cpu')\n", {"result-check", "devices-cpu"}},
    {"try body",
     "import os\ntry:\n    os.environ.setdefault('JAX_PLATFORMS', 'cpu')\nexcept KeyError:\n    pass\n",
     {"env-platforms-cpu"}},
    {"match case",
     "import jax\nmatch mode:\n    case 'debug':\n        jax.config.update('jax_platforms', 'cpu')\n",
     {"config-platforms-cpu"}},
    {"one-line if", "import os\nif debug: os.environ['JAX_PLATFORMS'] = 'cpu'\n", {"env-platforms-cpu"}},
    {"after a semicolon", "import os\nx = 1; os.putenv('JAX_PLATFORMS', 'cpu')\n", {"env-platforms-cpu"}},
    {"backslash continuation", "import jax\nd = jax.\\\n    devices('cpu')\n", {"devices-cpu"}},
    {"f-string field", "import jax\nprint(f'on {jax.devices(\"cpu\")[0]}')\n", {"devices-cpu"}},
    {"f-string format spec", "import jax\nprint(f'{x:>{len(jax.devices(\"cpu\"))}}')\n", {"devices-cpu"}},
    {"nested f-string", "import jax\nprint(f\"\"\"{f'{jax.devices(\"cpu\")}'}\"\"\")\n", {"devices-cpu"}},
    {"f-string through an alias",
     "import jax as j\nprint(f'{j.config.update(\"jax_platforms\", \"cpu\")}')\n",
     {"config-platforms-cpu"}},
    {"exec'd string", "exec(\"import os\\nos.environ['JAX_PLATFORMS'] = 'cpu'\")\n", {"env-platforms-cpu"}},
    {"__setitem__", "import os\nos.environ.__setitem__('JAX_PLATFORMS', 'cpu')\n", {"env-platforms-cpu"}},
    {"handed on as a value",
     "import jax, functools\ncpus = functools.partial(jax.devices, 'cpu')\n",
     {"platform-unresolved"}},
    {"a config update handed on", "import jax\nset_option = jax.config.update\n", {"platform-unresolved"}},
    {"tuple target", "import os\nos.environ['JAX_PLATFORMS'], n = 'cpu', 2\n", {"platform-unresolved"}},
    // handed on to a program the script starts
    {"env dict display",
     "import os, subprocess\nsubprocess.run(cmd, env={**os.environ, 'JAX_PLATFORMS': 'cpu'})\n",
     {"env-platforms-cpu"}},
    {"env dict() keyword",
     "import os, subprocess\nsubprocess.run(cmd, env=dict(os.environ, JAX_PLATFORMS='cpu'))\n",
     {"env-platforms-cpu"}},
    {"env mapping item",
     "import os\nenv = os.environ.copy()\nenv['JAX_PLATFORMS'] = 'cpu'\nsubprocess.run(cmd, env=env)\n",
     {"env-platforms-cpu"}},
    {"env mapping update",
     "import os\nenv = dict(os.environ)\nenv.update({'XLA_FLAGS': '--xla_force_host_platform_device_count=8'})\n",
     {"xla-force-host-devices"}},
    {"env mapping keyword update", "env = {}\nenv.update(JAX_DEFAULT_DEVICE='cpu')\n", {"env-default-device-cpu"}},
    {"os.execve",
     "import os, sys\nos.execve(sys.executable, argv, {'JAX_PLATFORMS': 'cpu,tpu'})\n",
     {"env-platforms-cpu"}},
    {"multiprocessing",
     "import multiprocessing as mp\np = mp.Process(target=run, kwargs={'env': {'JAX_PLATFORMS': 'cpu'}})\n",
     {"env-platforms-cpu"}},
    {"shell command line",
     "import subprocess\nsubprocess.run('JAX_PLATFORMS=cpu python train.py', shell=True)\n",
     {"env-platforms-cpu"}},
    {"env command",
     "import subprocess, sys\nsubprocess.check_call(['env', 'JAX_PLATFORMS=cpu', sys.executable, 'x.py'])\n",
     {"env-platforms-cpu"}},
    {"os.system",
     "import os\nos.system(\"XLA_FLAGS='--xla_force_host_platform_device_count=4' python x.py\")\n",
     {"xla-force-host-devices"}},
    {"command line from an f-string",
     "import os\nos.system(f'JAX_PLATFORMS={p} python x.py')\n",
     {"platform-unresolved"}},
    {"environment then runpy",
     "import os, runpy\nos.environ['JAX_PLATFORMS'] = 'cpu'\nrunpy.run_module('train')\n",
     {"env-platforms-cpu"}},
    {"environment then subprocess",
     "import os, subprocess\nos.environ.update(JAX_PLATFORMS='cpu')\nsubprocess.run(['python', 'x.py'])\n",
     {"env-platforms-cpu"}},
    // not a selection: the same names where nothing selects the CPU
    {"tpu in a started program's env",
     "import os, subprocess\nsubprocess.run(cmd, env={**os.environ, 'JAX_PLATFORMS': 'tpu'})\n",
     {}},
    {"a message, not a command", "print('run with JAX_PLATFORMS=cpu python x.py to test')\n", {}},
    {"a docstring", "def f():\n    \"\"\"jax.devices('cpu') and JAX_PLATFORMS=cpu\"\"\"\n", {}},
    {"an f-string with no call", "import jax\nprint(f'{n} devices, backend {backend}')\n", {}},
    {"a printed process index", "import jax\nprint(f'process {jax.process_index()}')\n", {}},
    {"an os.environ update read once",
     "import os\nos.environ.update({'JAX_PLATFORMS': 'cpu'})\n",
     {"env-platforms-cpu"}},
};

TEST(ClassifierPlacement, EveryCpuSelectionIsFoundWhereverItSits) {
  for (const PlacementCase& placement : k_placements) {
    EXPECT_EQ(rules(placement.source), placement.rules) << placement.name << ":\n" << placement.source;
  }
}

TEST(ClassifierPlacement, AnFStringsRowIsAtTheStringAndSaysWhereItCameFrom) {
  const auto c = classify_source("import jax\nx = 1\nprint(f'on {jax.devices(\"cpu\")[0]}')\n");
  const Evidence* row = first(c, "devices-cpu");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->line, 3U);
  EXPECT_EQ(row->column, 7U);
  EXPECT_EQ(row->detail, "in an f-string's {...} field");
}

// The fuzzer's seeds of these forms (fuzz/corpus/python/) say on their first lines what they must
// give: `# expected rows: ...`, `# expected modules: ...` (loaded by a call, with their leading
// dots), `# expected files: ...` (`./` when relative to the file's folder).
TEST(ClassifierCorpus, FuzzSeedsGiveTheirExpectedRows) {
  namespace fs = std::filesystem;
  std::size_t seeds = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(TPULAUNCH_SOURCE_DIR) / "fuzz/corpus/python")) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string source{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!source.starts_with("# expected rows:")) {
      continue;
    }
    ++seeds;
    const auto expected = [&](std::string_view what) {
      Strings words;
      const std::string key = "# expected " + std::string(what) + ":";
      const auto at = source.find(key);
      if (at != std::string::npos) {
        std::istringstream line(source.substr(at + key.size(), source.find('\n', at) - at - key.size()));
        for (std::string word; line >> word;) {
          words.push_back(word);
        }
      }
      return words;
    };
    const auto c = classify_source(source);
    Strings modules;
    for (const auto& m : c.imports) {
      if (!m.call.empty()) {
        modules.push_back(std::string(m.level, '.') + m.module);
      }
    }
    EXPECT_EQ(rules(source), expected("rows")) << entry.path();
    EXPECT_EQ(modules, expected("modules")) << entry.path();
    EXPECT_EQ(loaded_files(c), expected("files")) << entry.path();
  }
  EXPECT_GE(seeds, 7U);
}

} // namespace
} // namespace tpulaunch
