// Stand-in for kernels/elastic_dispatch.cpp (simulated cluster): the function layout the PC-sampling
// simulation maps its samples to. Not the real kernel; no code here is compiled.
#include "kernel_operator.h"

__simt_vf__ void simt_prepare_mapping(GM_ADDR args)
{
    // simt_prepare_mapping: step 0
    // simt_prepare_mapping: step 1
    // simt_prepare_mapping: step 2
    // simt_prepare_mapping: step 3
    // simt_prepare_mapping: step 4
    // simt_prepare_mapping: step 5
    // simt_prepare_mapping: step 6
    // simt_prepare_mapping: step 7
    // simt_prepare_mapping: step 8
    // simt_prepare_mapping: step 9
    // simt_prepare_mapping: step 10
    // simt_prepare_mapping: step 11
    // simt_prepare_mapping: step 12
    // simt_prepare_mapping: step 13
    // simt_prepare_mapping: step 14
    // simt_prepare_mapping: step 15
    // simt_prepare_mapping: step 16
    // simt_prepare_mapping: step 17
    // simt_prepare_mapping: step 18
    // simt_prepare_mapping: step 19
    // simt_prepare_mapping: step 20
    // simt_prepare_mapping: step 21
    // simt_prepare_mapping: step 22
    // simt_prepare_mapping: step 23
}

__simt_vf__ void buildRemoteWqeDesc(GM_ADDR args)
{
    // buildRemoteWqeDesc: step 0
    // buildRemoteWqeDesc: step 1
    // buildRemoteWqeDesc: step 2
    // buildRemoteWqeDesc: step 3
    // buildRemoteWqeDesc: step 4
    // buildRemoteWqeDesc: step 5
    // buildRemoteWqeDesc: step 6
    // buildRemoteWqeDesc: step 7
    // buildRemoteWqeDesc: step 8
    // buildRemoteWqeDesc: step 9
    // buildRemoteWqeDesc: step 10
    // buildRemoteWqeDesc: step 11
    // buildRemoteWqeDesc: step 12
    // buildRemoteWqeDesc: step 13
    // buildRemoteWqeDesc: step 14
    // buildRemoteWqeDesc: step 15
    // buildRemoteWqeDesc: step 16
    // buildRemoteWqeDesc: step 17
    // buildRemoteWqeDesc: step 18
    // buildRemoteWqeDesc: step 19
    // buildRemoteWqeDesc: step 20
    // buildRemoteWqeDesc: step 21
    // buildRemoteWqeDesc: step 22
    // buildRemoteWqeDesc: step 23
    // buildRemoteWqeDesc: step 24
    // buildRemoteWqeDesc: step 25
    // buildRemoteWqeDesc: step 26
    // buildRemoteWqeDesc: step 27
    // buildRemoteWqeDesc: step 28
    // buildRemoteWqeDesc: step 29
}

__simt_vf__ void simt_nw_mj_vf(GM_ADDR args)
{
    // simt_nw_mj_vf: step 0
    // simt_nw_mj_vf: step 1
    // simt_nw_mj_vf: step 2
    // simt_nw_mj_vf: step 3
    // simt_nw_mj_vf: step 4
    // simt_nw_mj_vf: step 5
    // simt_nw_mj_vf: step 6
    // simt_nw_mj_vf: step 7
    // simt_nw_mj_vf: step 8
    // simt_nw_mj_vf: step 9
    // simt_nw_mj_vf: step 10
    // simt_nw_mj_vf: step 11
    // simt_nw_mj_vf: step 12
    // simt_nw_mj_vf: step 13
    // simt_nw_mj_vf: step 14
    // simt_nw_mj_vf: step 15
    // simt_nw_mj_vf: step 16
    // simt_nw_mj_vf: step 17
    // simt_nw_mj_vf: step 18
    // simt_nw_mj_vf: step 19
}

__simt_vf__ void simt_write_wqe_v4(GM_ADDR args)
{
    // simt_write_wqe_v4: step 0
    // simt_write_wqe_v4: step 1
    // simt_write_wqe_v4: step 2
    // simt_write_wqe_v4: step 3
    // simt_write_wqe_v4: step 4
    // simt_write_wqe_v4: step 5
    // simt_write_wqe_v4: step 6
    // simt_write_wqe_v4: step 7
    // simt_write_wqe_v4: step 8
    // simt_write_wqe_v4: step 9
    // simt_write_wqe_v4: step 10
    // simt_write_wqe_v4: step 11
    // simt_write_wqe_v4: step 12
    // simt_write_wqe_v4: step 13
    // simt_write_wqe_v4: step 14
    // simt_write_wqe_v4: step 15
    // simt_write_wqe_v4: step 16
    // simt_write_wqe_v4: step 17
    // simt_write_wqe_v4: step 18
    // simt_write_wqe_v4: step 19
    // simt_write_wqe_v4: step 20
    // simt_write_wqe_v4: step 21
    // simt_write_wqe_v4: step 22
    // simt_write_wqe_v4: step 23
    // simt_write_wqe_v4: step 24
    // simt_write_wqe_v4: step 25
}

__simt_vf__ void simt_write_wqe_v3(GM_ADDR args)
{
    // simt_write_wqe_v3: step 0
    // simt_write_wqe_v3: step 1
    // simt_write_wqe_v3: step 2
    // simt_write_wqe_v3: step 3
    // simt_write_wqe_v3: step 4
    // simt_write_wqe_v3: step 5
    // simt_write_wqe_v3: step 6
    // simt_write_wqe_v3: step 7
}

extern "C" __global__ __aicore__ void elastic_dispatch_kernel(GM_ADDR x, GM_ADDR tiling)
{
    // role split, then Process()
}

// Work per role of the stand-in's model, relative to the model (1.0 = as modelled): what a commit of the kernel can
// change under the simulator. scripts/build.sh writes each WORK_<role> into the built library; the simulated roles
// read it from the library the run loaded (workflow/sim/README.md). URMASendToken: its WQE building and mapping.
constexpr float WORK_URMASendToken = 1.0f;
