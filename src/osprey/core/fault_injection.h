// Fault injection for crash-consistency tests (issue 27): the writers in io/ and the collectives
// in comm/ call fault_point at each write, fsync, rename and all-reduce, and a test makes the
// n-th of them kill the process or fail, then checks that nothing finished was lost.
//   OSPREY_FAULT_INJECT=rename:3 osprey train ...   # dies at the third rename, as kill -9 would
#pragma once

namespace osprey {

// Read once from OSPREY_FAULT_INJECT:
//   <point>:<n>       the n-th time this process reaches that point it dies there (_exit(137)
//                     after one line on stderr), leaving the files as a kill -9 would;
//   <point>:<n>:fail  the n-th call fails instead, as if the system call had returned EIO: the
//                     writer's error path runs (the caller sees an IoError);
//   count             nothing fails; at exit one line on stderr says how often each point was
//                     reached ("osprey: fault points reached: write=W fsync=F rename=R ..."), so
//                     a sweep knows every n to try.
// The points: write, fsync and rename of every file and folder io/ writes, and allreduce (each
// all-reduce of the MPI and Gloo communicators, once every rank has entered it, comm/). Unset,
// it costs one load per call. Returns 0, or the errno the caller must fail with.
int fault_point(const char* point) noexcept;

}  // namespace osprey
