#include "interpose/progress_hook.hpp"

#include <dlfcn.h>

#include "interpose/guard.hpp"
#include "interpose/requests.hpp"
#include "tutti/tutti.h"

namespace tutti::interpose {
namespace {

using Callback = int (*)();
using Register = int (*)(Callback);

bool hooked = false;

// Runs inside Open MPI's progress engine: also where tutti itself polls the
// MPI library (its MPI transport, its "mpi" algorithm), which inside_tutti()
// tells apart.
int progress_tutti() {
  if (!tutti_requests_outstanding() || inside_tutti()) return 0;
  InsideTutti inside;
  int events = 0;
  tutti_progress(&events);
  return events;
}

Register find(const char* name) {
  return reinterpret_cast<Register>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

void hook_progress() {
  if (hooked) return;
  const Register reg = find("opal_progress_register");
  hooked = reg && reg(progress_tutti) == 0;  // OPAL_SUCCESS
}

void unhook_progress() {
  if (!hooked) return;
  if (const Register unreg = find("opal_progress_unregister")) unreg(progress_tutti);
  hooked = false;
}

}  // namespace tutti::interpose
