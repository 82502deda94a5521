// matmul_rs: exported by export.py with JAX 0.10.2
#loc1 = loc("a")
#loc2 = loc("b")
#loc5 = loc("shard_map")
#loc8 = loc("reduce_scatter")
#loc11 = loc("shard_map:"(#loc5))
#loc14 = loc("reduce_scatter:"(#loc8))
"builtin.module"() <{sym_name = "jit_matmul_rs"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=4]>, sym_name = "mesh"}> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}} : () -> () loc(#loc)
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<1024x512xbf16>, tensor<512x1024xbf16>) -> tensor<1024x1024xbf16>, res_attrs = [{jax.result_info = "result"}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<1024x512xbf16> loc("a"), %arg1: tensor<512x1024xbf16> loc("b")):
    %0 = "sdy.manual_computation"(%arg0, %arg1) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{}, {"x"}]>, <@mesh, [{"x"}, {}]>]>, manual_axes = #sdy<manual_axes{"x"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>}> ({
    ^bb0(%arg2: tensor<1024x128xbf16> loc("shard_map:"(#loc5)), %arg3: tensor<128x1024xbf16> loc("shard_map:"(#loc5))):
      %1 = "stablehlo.dot_general"(%arg2, %arg3) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<1024x128xbf16>, tensor<128x1024xbf16>) -> tensor<1024x1024xbf16> loc(#loc16)
      %2 = "stablehlo.reduce_scatter"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<bf16> loc("reduce_scatter:"(#loc8)), %arg5: tensor<bf16> loc("reduce_scatter:"(#loc8))):
        %3 = "stablehlo.add"(%arg4, %arg5) : (tensor<bf16>, tensor<bf16>) -> tensor<bf16> loc(#loc20)
        "stablehlo.return"(%3) : (tensor<bf16>) -> () loc(#loc17)
      }) : (tensor<1024x1024xbf16>) -> tensor<256x1024xbf16> loc(#loc17)
      "sdy.return"(%2) : (tensor<256x1024xbf16>) -> () loc(#loc11)
    }) : (tensor<1024x512xbf16>, tensor<512x1024xbf16>) -> tensor<1024x1024xbf16> loc(#loc19)
    "func.return"(%0) : (tensor<1024x1024xbf16>) -> () loc(#loc21)
  }) : () -> () loc(#loc)
}) {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} : () -> () loc(#loc)
#loc = loc(unknown)
#loc3 = loc("lit-tests/Inputs/stablehlo/export.py":79:17 to :45)
#loc4 = loc("lit-tests/Inputs/stablehlo/export.py":89:4 to :21)
#loc6 = loc("lit-tests/Inputs/stablehlo/export.py":40:32 to :37)
#loc7 = loc("lit-tests/Inputs/stablehlo/export.py":40:11 to :76)
#loc9 = loc("main"(#loc3))
#loc10 = loc("<module>"(#loc4))
#loc12 = loc("matmul_rs"(#loc6))
#loc13 = loc("matmul_rs"(#loc7))
#loc15 = loc(callsite(#loc9 at #loc10))
#loc16 = loc("dot_general"(#loc12))
#loc17 = loc("reduce_scatter"(#loc13))
#loc18 = loc(callsite(#loc13 at #loc13))
#loc19 = loc("jit(matmul_rs)/shard_map"(#loc15))
#loc20 = loc("add"(#loc18))
#loc21 = loc("jit(matmul_rs)"(#loc15))
