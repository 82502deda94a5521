// ag_matmul_subgroup: exported by export.py with JAX 0.10.2
#loc1 = loc("a")
#loc2 = loc("b")
#loc5 = loc("shard_map")
#loc10 = loc("shard_map:"(#loc5))
"builtin.module"() <{sym_name = "jit_ag_matmul_subgroup"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=2]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}} : () -> () loc(#loc)
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<1024x512xbf16>, tensor<512x1024xbf16>) -> tensor<1024x1024xbf16>, res_attrs = [{jax.result_info = "result"}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<1024x512xbf16> loc("a"), %arg1: tensor<512x1024xbf16> loc("b")):
    %0 = "sdy.manual_computation"(%arg0, %arg1) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>, <@mesh, [{}, {"y"}]>]>, manual_axes = #sdy<manual_axes{"x", "y"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{}, {"y"}]>]>}> ({
    ^bb0(%arg2: tensor<512x512xbf16> loc("shard_map:"(#loc5)), %arg3: tensor<512x512xbf16> loc("shard_map:"(#loc5))):
      %1 = "stablehlo.all_gather"(%arg2) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> : (tensor<512x512xbf16>) -> tensor<1024x512xbf16> loc(#loc14)
      %2 = "stablehlo.dot_general"(%1, %arg3) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<1024x512xbf16>, tensor<512x512xbf16>) -> tensor<1024x512xbf16> loc(#loc15)
      "sdy.return"(%2) : (tensor<1024x512xbf16>) -> () loc(#loc10)
    }) : (tensor<1024x512xbf16>, tensor<512x1024xbf16>) -> tensor<1024x1024xbf16> loc(#loc16)
    "func.return"(%0) : (tensor<1024x1024xbf16>) -> () loc(#loc17)
  }) : () -> () loc(#loc)
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> () loc(#loc)
#loc = loc(unknown)
#loc3 = loc("lit-tests/Inputs/stablehlo/export.py":79:17 to :45)
#loc4 = loc("lit-tests/Inputs/stablehlo/export.py":89:4 to :21)
#loc6 = loc("lit-tests/Inputs/stablehlo/export.py":58:11 to :57)
#loc7 = loc("lit-tests/Inputs/stablehlo/export.py":58:11 to :61)
#loc8 = loc("main"(#loc3))
#loc9 = loc("<module>"(#loc4))
#loc11 = loc("ag_matmul_subgroup"(#loc6))
#loc12 = loc("ag_matmul_subgroup"(#loc7))
#loc13 = loc(callsite(#loc8 at #loc9))
#loc14 = loc("all_gather"(#loc11))
#loc15 = loc("dot_general"(#loc12))
#loc16 = loc("jit(ag_matmul_subgroup)/shard_map"(#loc13))
#loc17 = loc("jit(ag_matmul_subgroup)"(#loc13))
