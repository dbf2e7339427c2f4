// For tests: an independent reader of TensorBoard event files, in Python. Its protobuf message
// types are declared in the script itself from TensorBoard's field numbers (event.proto,
// summary.proto), not from osprey's tensorboard.proto, and TFRecord's framing and masked CRC32C
// are checked by hand. Prints the events as JSON: [{wall_time, step, file_version, values:
// [{tag, simple_value} or {tag, histo: {...}} or {tag, plugin, tensor: {dtype, shape},
// hparams: {...}}]}]; the hparams plugin's content is decoded with its own declared messages
// (plugins/hparams/api.proto and plugin_data.proto).
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
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

F = descriptor_pb2.FieldDescriptorProto
proto = descriptor_pb2.FileDescriptorProto(name='tb_check.proto', package='tbcheck', syntax='proto3',
                                           dependency=['google/protobuf/struct.proto'])
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
# SummaryMetadata plugin_data 1 (PluginData plugin_name 1, content 2); TensorProto dtype 1,
# tensor_shape 2 (dim 2: size 1); Summary.Value metadata 9, tensor 8.
message('PluginData', [('plugin_name', 1, F.TYPE_STRING, 0, ''), ('content', 2, F.TYPE_BYTES, 0, '')])
message('Metadata', [('plugin_data', 1, F.TYPE_MESSAGE, 0, '.tbcheck.PluginData')])
message('Dim', [('size', 1, F.TYPE_INT64, 0, '')])
message('Shape', [('dim', 2, F.TYPE_MESSAGE, 1, '.tbcheck.Dim')])
message('Tensor', [('dtype', 1, F.TYPE_INT32, 0, ''), ('tensor_shape', 2, F.TYPE_MESSAGE, 0, '.tbcheck.Shape')])
message('Value', [('tag', 1, F.TYPE_STRING, 0, ''), ('simple_value', 2, F.TYPE_FLOAT, 0, ''),
                  ('histo', 5, F.TYPE_MESSAGE, 0, '.tbcheck.Histogram'),
                  ('tensor', 8, F.TYPE_MESSAGE, 0, '.tbcheck.Tensor'),
                  ('metadata', 9, F.TYPE_MESSAGE, 0, '.tbcheck.Metadata')])
# The hparams plugin: HParamsPluginData version 1 / experiment 2 / session_start_info 3 /
# session_end_info 4; Experiment time_created_secs 3, hparam_infos 4, metric_infos 5; HParamInfo
# name 1, type 4, domain_discrete 5, domain_interval 6 (min 1, max 2); MetricInfo name 1
# (group 1, tag 2), dataset_type 5; SessionStartInfo hparams 1 (a map: entries key 1, value 2),
# group_name 4, start_time_secs 5; SessionEndInfo status 1, end_time_secs 2.
message('Interval', [('min_value', 1, F.TYPE_DOUBLE, 0, ''), ('max_value', 2, F.TYPE_DOUBLE, 0, '')])
message('HParamInfo', [('name', 1, F.TYPE_STRING, 0, ''), ('type', 4, F.TYPE_INT32, 0, ''),
                       ('domain_discrete', 5, F.TYPE_MESSAGE, 0, '.google.protobuf.ListValue'),
                       ('domain_interval', 6, F.TYPE_MESSAGE, 0, '.tbcheck.Interval')])
message('MetricName', [('group', 1, F.TYPE_STRING, 0, ''), ('tag', 2, F.TYPE_STRING, 0, '')])
message('MetricInfo', [('name', 1, F.TYPE_MESSAGE, 0, '.tbcheck.MetricName'),
                       ('dataset_type', 5, F.TYPE_INT32, 0, '')])
message('Experiment', [('time_created_secs', 3, F.TYPE_DOUBLE, 0, ''),
                       ('hparam_infos', 4, F.TYPE_MESSAGE, 1, '.tbcheck.HParamInfo'),
                       ('metric_infos', 5, F.TYPE_MESSAGE, 1, '.tbcheck.MetricInfo')])
message('HParamEntry', [('key', 1, F.TYPE_STRING, 0, ''), ('value', 2, F.TYPE_MESSAGE, 0, '.google.protobuf.Value')])
message('SessionStart', [('hparams', 1, F.TYPE_MESSAGE, 1, '.tbcheck.HParamEntry'),
                         ('group_name', 4, F.TYPE_STRING, 0, ''), ('start_time_secs', 5, F.TYPE_DOUBLE, 0, '')])
message('SessionEnd', [('status', 1, F.TYPE_INT32, 0, ''), ('end_time_secs', 2, F.TYPE_DOUBLE, 0, '')])
message('HParamsData', [('version', 1, F.TYPE_INT32, 0, ''),
                        ('experiment', 2, F.TYPE_MESSAGE, 0, '.tbcheck.Experiment'),
                        ('session_start_info', 3, F.TYPE_MESSAGE, 0, '.tbcheck.SessionStart'),
                        ('session_end_info', 4, F.TYPE_MESSAGE, 0, '.tbcheck.SessionEnd')])
message('Summary', [('value', 1, F.TYPE_MESSAGE, 1, '.tbcheck.Value')])
message('Event', [('wall_time', 1, F.TYPE_DOUBLE, 0, ''), ('step', 2, F.TYPE_INT64, 0, ''),
                  ('file_version', 3, F.TYPE_STRING, 0, ''),
                  ('summary', 5, F.TYPE_MESSAGE, 0, '.tbcheck.Summary')])
pool = descriptor_pool.DescriptorPool()
struct_file = descriptor_pb2.FileDescriptorProto()
struct_pb2.DESCRIPTOR.CopyToProto(struct_file)
pool.Add(struct_file)
pool.Add(proto)
factory = message_factory.MessageFactory(pool)
Event = factory.GetPrototype(pool.FindMessageTypeByName('tbcheck.Event'))
HParamsData = factory.GetPrototype(pool.FindMessageTypeByName('tbcheck.HParamsData'))

def plain(v):  # a google.protobuf.Value as a JSON value
    kind = v.WhichOneof('kind')
    return {'number_value': v.number_value, 'string_value': v.string_value,
            'bool_value': v.bool_value}.get(kind)

def hparams(content):
    d = HParamsData()
    d.ParseFromString(content)
    kinds = [k for k in ('experiment', 'session_start_info', 'session_end_info') if d.HasField(k)]
    out = {'version': d.version, 'data': kinds[0] if len(kinds) == 1 else kinds}
    if out['data'] == 'experiment':
        e = d.experiment
        out['time_created_secs'] = e.time_created_secs
        out['hparam_infos'] = [{'name': h.name, 'type': h.type,
                                'discrete': [plain(x) for x in h.domain_discrete.values]
                                if h.HasField('domain_discrete') else None,
                                'interval': [h.domain_interval.min_value, h.domain_interval.max_value]
                                if h.HasField('domain_interval') else None} for h in e.hparam_infos]
        out['metric_infos'] = [{'group': m.name.group, 'tag': m.name.tag,
                                'dataset_type': m.dataset_type} for m in e.metric_infos]
    elif out['data'] == 'session_start_info':
        s = d.session_start_info
        out['hparams'] = {h.key: plain(h.value) for h in s.hparams}
        out['group_name'] = s.group_name
        out['start_time_secs'] = s.start_time_secs
    elif out['data'] == 'session_end_info':
        out['status'] = d.session_end_info.status
        out['end_time_secs'] = d.session_end_info.end_time_secs
    return out

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
        elif v.HasField('metadata'):
            p = v.metadata.plugin_data
            out['values'].append({'tag': v.tag, 'plugin': p.plugin_name, 'tensor': {
                'dtype': v.tensor.dtype, 'shape': [d.size for d in v.tensor.tensor_shape.dim]},
                'hparams': hparams(p.content) if p.plugin_name == 'hparams' else None})
        else:
            out['values'].append({'tag': v.tag, 'simple_value': v.simple_value})
    events.append(out)
print(json.dumps(events))
)PY";

}  // namespace osprey::io
