"""Writes the excerpts of this directory from the upstream repositories (run by hand, with
their git mirrors; the tests read the excerpts, never the mirrors).

    python3 testdata/models/extract.py MEGATRON_BRIDGE_GIT_DIR LLAMA_MODELS_GIT_DIR DEEPSEEK_R1_README

Each excerpt is the named classes of one upstream file, verbatim, with the file, the tag or
commit and the line numbers each class starts at; SOURCES.md says why each source is the model's.
"""
import re, subprocess, sys

def show(git_dir, rev, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{rev}:{path}"], check=True,
                          capture_output=True, text=True).stdout.splitlines()

def classes(lines, names):
    """The blocks of the named top-level classes, each with its decorator and 1-based line."""
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"class (\w+)\(", line)
        if not m or m.group(1) not in names:
            continue
        end = i + 1
        while end < len(lines) and not re.match(r"(@|class |def |[A-Za-z_])", lines[end]):
            end += 1
        out.append((i + 1, lines[i:end]))
    missing = set(names) - {re.match(r"class (\w+)", b[0]).group(1) for _, b in out}
    if missing:
        sys.exit(f"missing classes: {sorted(missing)}")
    return out

def write(name, header, blocks):
    with open(name, "w") as f:
        f.write(header)
        for line, block in blocks:
            f.write(f"\n# --- line {line}\n")
            f.write("\n".join(block).rstrip() + "\n")

LLAMA = ["meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.2-1B",
         "meta-llama/Llama-3.2-3B", "meta-llama/Llama-3.3-70B-Instruct"]

MB_TAG = "v0.3.1"
MB = {
    "megatron-bridge-qwen_provider.py": ("src/megatron/bridge/models/qwen/qwen_provider.py", [
        "Qwen2ModelProvider", "Qwen25ModelProvider500M", "Qwen25ModelProvider1P5B", "Qwen25ModelProvider3B",
        "Qwen25ModelProvider7B", "Qwen25ModelProvider14B", "Qwen25ModelProvider32B", "Qwen25ModelProvider72B",
        "Qwen3ModelProvider", "Qwen3ModelProvider600M", "Qwen3ModelProvider1P7B", "Qwen3ModelProvider4B",
        "Qwen3ModelProvider8B", "Qwen3ModelProvider14B", "Qwen3ModelProvider32B"]),
    "megatron-bridge-gemma3_provider.py": ("src/megatron/bridge/models/gemma/gemma3_provider.py", [
        "Gemma3ModelProvider", "Gemma3ModelProvider1B", "Gemma3ModelProvider4B", "Gemma3ModelProvider12B",
        "Gemma3ModelProvider27B"]),
    "megatron-bridge-mistral_provider.py": ("src/megatron/bridge/models/mistral/mistral_provider.py", [
        "MistralModelProvider", "MistralSmall3ModelProvider24B"]),
}

def main():
    mb, llama, readme = sys.argv[1:4]
    for name, (path, names) in MB.items():
        header = f"# NVIDIA-NeMo/Megatron-Bridge {MB_TAG}: {path} (Apache-2.0), the classes below, verbatim.\n"
        write(name, header, classes(show(mb, MB_TAG, path), names))
    # The last commit with models/sku_list.py (c4d8644 moved it to llama-stack).
    commit = "8c88b8c0d75dbd136b6895220c4f56ccbe2f2d24"
    lines = show(llama, commit, "models/sku_list.py")
    blocks = [(i + 1, [l]) for i, l in enumerate(lines) if l.startswith("LLAMA3_VOCAB_SIZE")]
    for repo in LLAMA:
        at = next(i for i, l in enumerate(lines) if f'huggingface_repo="{repo}"' in l)
        start = max(i for i in range(at) if lines[i].strip() == "Model(")
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        end = next(i for i in range(at, len(lines)) if lines[i] == indent + "),")
        blocks.append((start + 1, lines[start : end + 1]))
    write("llama-models-sku_list.py", f"# meta-llama/llama-models {commit}: models/sku_list.py, the Llama 3 vocabulary and the models below, verbatim.\n", blocks)
    table = [l for l in open(readme).read().splitlines() if l.startswith("|") and "DeepSeek-R1-Distill" in l and "](https://huggingface.co/" in l]
    with open("deepseek-r1-distill-bases.md", "w") as f:
        f.write("<!-- deepseek-ai/DeepSeek-R1 README.md, section 3 (DeepSeek-R1-Distill Models), the table's rows, verbatim. -->\n")
        f.write("\n".join(table) + "\n")

main()
