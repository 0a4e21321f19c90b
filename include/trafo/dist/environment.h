// Where this process sits in a data-parallel job: torchrun's environment variables, and
// `trafo train --nproc N`, which starts N local copies of itself with those variables set.
#pragma once

#include <string>

namespace trafo::dist {

struct Environment {
  int rank = 0;             // RANK
  int world_size = 1;       // WORLD_SIZE
  int local_rank = 0;       // LOCAL_RANK: picks the CUDA device on a node
  int local_world_size = 1; // LOCAL_WORLD_SIZE: ranks on this machine, which share its cores
  std::string master_addr;  // MASTER_ADDR: host of the rendezvous store
  int master_port = 0;      // MASTER_PORT
  bool agent_store = false; // TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent hosts the store
  std::string store_prefix; // keys of this attempt (torchrun restarts count up)
  int listen_fd = -1;       // TRAFO_STORE_FD: a socket `--nproc` bound for rank 0's store
  bool launched = false;    // started by `trafo train --nproc`
  bool distributed() const { return world_size > 1; }
};

// Reads the variables above; world_size 1 when WORLD_SIZE is unset. Throws trafo::InputError
// for an inconsistent environment (WORLD_SIZE without MASTER_ADDR, RANK >= WORLD_SIZE, ...).
Environment read_environment();

// localhost or 127.x.x.x: the job stays on this machine.
bool is_loopback(const std::string& address);

// Binds a listening TCP socket on `address`:`port` (port 0: a free one); loopback addresses bind
// loopback only. Returns the descriptor; InputError when the port is in use.
int listen_on(const std::string& address, int port, int* bound_port = nullptr);

// Throws InputError where launch_local(nproc) cannot start: nproc outside [1, 1024], or under
// torchrun (WORLD_SIZE set).
void check_local_launch(int nproc);

// Runs `nproc` copies of this process's own command line (/proc/self/cmdline) as ranks
// 0..nproc-1 of one job on this machine, on loopback; they see TRAFO_LAUNCHED and do not launch. SIGINT/SIGTERM are passed on; when a rank
// fails, the others get `grace_s` seconds to notice and stop before they are killed. Returns the
// exit code of the first rank that failed, or 0.
int launch_local(int nproc, double grace_s);

}  // namespace trafo::dist
