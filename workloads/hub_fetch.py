import sys

from huggingface_hub import HfApi, snapshot_download

repo_type, repo_id, revision = sys.argv[1], sys.argv[2], sys.argv[3] or None
local_dir = sys.argv[4] if len(sys.argv) > 4 else None
commit = HfApi().repo_info(repo_id, repo_type=repo_type, revision=revision).sha
print(f"{repo_type} {repo_id}: revision {revision or '(default branch)'} is commit {commit}", flush=True)
snapshot_download(repo_id=repo_id, repo_type=repo_type, revision=commit, local_dir=local_dir)
if repo_type == "dataset" and local_dir is None:
    import datasets

    print(repo_id, datasets.load_dataset(repo_id, revision=commit), flush=True)
