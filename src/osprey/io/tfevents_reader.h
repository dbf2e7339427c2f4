// For tests: an independent reader of TensorBoard event files, in Python. Its protobuf message
// types are declared in the script itself from TensorBoard's field numbers (event.proto,
// summary.proto), not from osprey's tensorboard.proto, and TFRecord's framing and masked CRC32C
// are checked by hand. Prints the events as JSON: [{wall_time, step, file_version, values:
// [{tag, simple_value} or {tag, histo: {...}}]}].
//   auto out = run_python(dir, "reader", io::kTfEventsReader, events_file.string());
#pragma once

#include <cstdlib>

namespace osprey::io {

// Whether /usr/bin/python3 can import protobuf (Debian's python3-protobuf).
inline bool have_python_protobuf() {
  return std::system("/usr/bin/python3 -c 'import google.protobuf' > /dev/null 2>&1") == 0;
}

inline constexpr const char* kTfEventsReader = R"PY(
import json, struct, sys
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto
proto = descriptor_pb2.FileDescriptorProto(name='tb_check.proto', package='tbcheck', syntax='proto3')
def message(name, fields):
    m = proto.message_type.add(name=name)
    for field, number, kind, repeated, type_name in fields:
        f = m.field.add(name=field, number=number, type=kind,
                        label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
        if type_name:
            f.type_name = type_name
# TensorBoard's numbers: HistogramProto 1-7, Summary.Value tag 1 / simple_value 2 / histo 5,
# Summary.value 1, Event wall_time 1 / step 2 / file_version 3 / summary 5.
message('Histogram', [('min', 1, F.TYPE_DOUBLE, 0, ''), ('max', 2, F.TYPE_DOUBLE, 0, ''),
                      ('num', 3, F.TYPE_DOUBLE, 0, ''), ('sum', 4, F.TYPE_DOUBLE, 0, ''),
                      ('sum_squares', 5, F.TYPE_DOUBLE, 0, ''),
                      ('bucket_limit', 6, F.TYPE_DOUBLE, 1, ''), ('bucket', 7, F.TYPE_DOUBLE, 1, '')])
message('Value', [('tag', 1, F.TYPE_STRING, 0, ''), ('simple_value', 2, F.TYPE_FLOAT, 0, ''),
                  ('histo', 5, F.TYPE_MESSAGE, 0, '.tbcheck.Histogram')])
message('Summary', [('value', 1, F.TYPE_MESSAGE, 1, '.tbcheck.Value')])
message('Event', [('wall_time', 1, F.TYPE_DOUBLE, 0, ''), ('step', 2, F.TYPE_INT64, 0, ''),
                  ('file_version', 3, F.TYPE_STRING, 0, ''),
                  ('summary', 5, F.TYPE_MESSAGE, 0, '.tbcheck.Summary')])
pool = descriptor_pool.DescriptorPool()
pool.Add(proto)
Event = message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName('tbcheck.Event'))

def crc32c(data):
    crc = 0xffffffff
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff
def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xa282ead8) & 0xffffffff

buf, at, events = open(sys.argv[1], 'rb').read(), 0, []
while at < len(buf):
    header = buf[at:at + 8]
    n, = struct.unpack('<Q', header)
    assert struct.unpack('<I', buf[at + 8:at + 12])[0] == masked(header), 'length crc'
    data = buf[at + 12:at + 12 + n]
    assert struct.unpack('<I', buf[at + 12 + n:at + 16 + n])[0] == masked(data), 'data crc'
    at += 16 + n
    e = Event()
    e.ParseFromString(data)
    out = {'wall_time': e.wall_time, 'step': e.step, 'file_version': e.file_version, 'values': []}
    for v in e.summary.value:
        if v.HasField('histo'):
            h = v.histo
            out['values'].append({'tag': v.tag, 'histo': {
                'min': h.min, 'max': h.max, 'num': h.num, 'sum': h.sum,
                'sum_squares': h.sum_squares, 'bucket_limit': list(h.bucket_limit),
                'bucket': list(h.bucket)}})
        else:
            out['values'].append({'tag': v.tag, 'simple_value': v.simple_value})
    events.append(out)
print(json.dumps(events))
)PY";

}  // namespace osprey::io
