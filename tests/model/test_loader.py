"""Checkpoint loading: local folders, sharded files, errors that name what is wrong, no pickles, hub offline."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file
from tiny import tiny_config

from diffill.model import CheckpointError, DiffusionGemma, DiffusionGemmaConfig, DiffusionModel, save_model
from diffill.model.loader import resolve_checkpoint


@pytest.fixture()
def saved(tmp_path):
    torch.manual_seed(0)
    net = DiffusionGemma(tiny_config())
    for p in net.parameters():
        torch.nn.init.normal_(p, 0, 0.3)
    net.encoder_layer_scalars.fill_(0.9)
    save_model(net, tmp_path / "ckpt")
    return net, tmp_path / "ckpt"


def test_save_then_load_round_trips(saved):
    net, folder = saved
    loaded = DiffusionModel.from_pretrained(folder).net
    for name, value in net.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], value), name
    assert torch.allclose(loaded.encoder_layer_scalars, torch.full((2,), 0.9))


def test_sharded_checkpoint_with_index(saved, tmp_path):
    net, folder = saved
    tensors = load_file(folder / "model.safetensors")
    keys = sorted(tensors)
    shard_dir = tmp_path / "sharded"
    shard_dir.mkdir()
    shutil.copy(folder / "config.json", shard_dir / "config.json")
    half = len(keys) // 2
    weight_map = {}
    for i, part in enumerate((keys[:half], keys[half:])):
        name = f"model-0000{i + 1}-of-00002.safetensors"
        save_file({k: tensors[k] for k in part}, str(shard_dir / name))
        weight_map.update({k: name for k in part})
    (shard_dir / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    loaded = DiffusionModel.from_pretrained(shard_dir).net
    assert torch.equal(loaded.embed_tokens.weight, net.embed_tokens.weight)


def test_bf16_load(saved):
    _, folder = saved
    m = DiffusionModel.from_pretrained(folder, dtype="bf16")
    assert m.net.embed_tokens.weight.dtype == torch.bfloat16
    logits = m.denoise_logits([2, 5, 6], list(range(8)))
    assert logits.dtype == torch.float32 and torch.isfinite(logits).all()


def test_missing_tensor_is_named(saved):
    _, folder = saved
    tensors = load_file(folder / "model.safetensors")
    del tensors["model.decoder.layers.1.mlp.up_proj.weight"]
    save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"missing tensors: model\.decoder\.layers\.1\.mlp\.up_proj\.weight"):
        DiffusionModel.from_pretrained(folder)


def test_unknown_tensor_is_named(saved):
    _, folder = saved
    tensors = load_file(folder / "model.safetensors")
    tensors["model.decoder.layers.0.surprise"] = torch.zeros(3)
    save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"unknown tensors in checkpoint: model\.decoder\.layers\.0\.surprise"):
        DiffusionModel.from_pretrained(folder)


def test_wrong_shape_is_named(saved):
    _, folder = saved
    tensors = load_file(folder / "model.safetensors")
    tensors["model.decoder.norm.weight"] = torch.ones(7)
    save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"model\.decoder\.norm\.weight: shape \(7,\)"):
        DiffusionModel.from_pretrained(folder)


def test_vision_weights_are_skipped(saved):
    net, folder = saved
    tensors = load_file(folder / "model.safetensors")
    tensors["model.encoder.vision_tower.patch_embedder.input_proj.weight"] = torch.zeros(4, 4)
    tensors["model.encoder.embed_vision.embedding_projection.weight"] = torch.zeros(32, 4)
    save_file(tensors, str(folder / "model.safetensors"))
    loaded = DiffusionModel.from_pretrained(folder).net
    assert torch.equal(loaded.norm.weight, net.norm.weight)


def test_pickle_checkpoints_are_refused(tmp_path):
    folder = tmp_path / "pickled"
    folder.mkdir()
    tiny_config().save(folder / "config.json")
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(CheckpointError, match="pickle files are never loaded"):
        DiffusionModel.from_pretrained(folder)


def test_corrupt_safetensors_is_reported(saved):
    _, folder = saved
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 3])
    with pytest.raises(CheckpointError, match="safetensors"):
        DiffusionModel.from_pretrained(folder)


def test_invalid_config_is_reported(saved):
    _, folder = saved
    (folder / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(CheckpointError, match="invalid DiffusionGemma config"):
        DiffusionModel.from_pretrained(folder)


def test_hub_id_offline_gives_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True, raising=False)
    with pytest.raises(CheckpointError, match="google/diffusiongemma-26B-A4B-it.*offline"):
        resolve_checkpoint("google/diffusiongemma-26B-A4B-it")


def test_hub_id_uses_cached_snapshot(monkeypatch, saved, tmp_path):
    """A hub id resolves through huggingface_hub's cache (the download path), here pre-populated."""
    _, folder = saved
    calls = {}

    def fake_snapshot_download(repo_id, allow_patterns):
        calls["repo"] = repo_id
        calls["patterns"] = allow_patterns
        return str(folder)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    m = DiffusionModel.from_pretrained("someone/tiny-diffusiongemma")
    assert calls["repo"] == "someone/tiny-diffusiongemma"
    assert "*.safetensors" in calls["patterns"] and not any(p.endswith((".bin", ".pt")) for p in calls["patterns"])
    assert m.config.hidden_size == 32


def test_config_round_trip_through_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    cfg = tiny_config()
    cfg.save(tmp_path / "config.json")
    hf = transformers.DiffusionGemmaConfig.from_pretrained(tmp_path)
    assert hf.text_config.per_layer_config[1].head_dim == cfg.global_head_dim
    again = DiffusionGemmaConfig.from_hf_dict(hf.to_dict())
    for i in range(cfg.num_hidden_layers):
        assert again.layer_shape(i) == cfg.layer_shape(i)
    assert again.layer_types == cfg.layer_types


def test_dtype_follows_the_device():
    """fp32 on CPUs (bf16 there grew the daemon's memory), bf16 on GPUs; an explicit choice always wins."""
    import torch

    from diffill.model import runtime

    assert runtime.pick_dtype("cpu") == torch.float32
    assert runtime.pick_dtype("cpu", "bfloat16") == torch.bfloat16
    assert runtime.pick_dtype("cuda") == torch.bfloat16
    assert runtime.pick_dtype("cuda", "float32") == torch.float32
