# Writes a large engine for the benchmarks (scripts/bench-analyze.sh, scripts/bench-analyze-report.sh): the
# ResNet18 fp16 TREx fixture replicated COPIES times, the copies chained into one graph.
#   gen-large-engine.py FIXTURES/trex OUT_DIR COPIES
# writes OUT_DIR/layers_x.json ({"Layers": [...]} as trtexec writes it), OUT_DIR/profile_x.json
# (trtexec's line layout) and OUT_DIR/layers_bare.json (a bare list, which the reference analyzer
# needs).
import json, sys
src, out, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
doc = json.load(open(f"{src}/resnet18-pt-a100-fp16.layers.json"))
prof = json.load(open(f"{src}/resnet18-pt-a100-fp16.profile.json"))
first_in, last_out = doc["Bindings"][0], doc["Bindings"][-1]
layers, records = [], []
for i in range(copies):
    def rename(name, i=i):
        # Copy i reads copy i-1's output, so the copies form one chain.
        return f"c{i-1}/{last_out}" if i > 0 and name == first_in else f"c{i}/{name}"
    for layer in doc["Layers"]:
        l = dict(layer)
        l["Name"] = f"c{i}/{layer['Name']}"
        for key in ("Inputs", "Outputs"):
            l[key] = [dict(t, Name=rename(t["Name"])) for t in layer[key]]
        layers.append(l)
    for r in prof[1:]:
        records.append(dict(r, name=f"c{i}/{r['name']}", percentage=r["percentage"] / copies))
with open(f"{out}/layers_x.json", "w") as f:
    json.dump({"Layers": layers, "Bindings": [first_in, f"c{copies-1}/{last_out}"]}, f)
with open(f"{out}/layers_bare.json", "w") as f:
    json.dump(layers, f)
with open(f"{out}/profile_x.json", "w") as f:
    f.write("[\n  { \"count\" : %d }\n" % prof[0]["count"])
    for r in records:
        f.write(", { \"name\" : \"%s\", \"timeMs\" : %r, \"averageMs\" : %r, \"medianMs\" : %r, \"percentage\" : %r }\n"
                % (r["name"], r["timeMs"], r["averageMs"], r["medianMs"], r["percentage"]))
    f.write("]\n")
print(f"generated {len(layers)} layers, layers_x.json {len(open(f'{out}/layers_x.json','rb').read())} bytes", file=sys.stderr)
