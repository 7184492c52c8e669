"""One reader per format an upload may have: each sniffs, checks and reads its format in one place.

``read(f)`` asks each reader in ``READERS`` whether the bytes are its format (``claims``,
by content, never by the file's name); the one that claims them reads them (``read``) or
refuses them with one line. Bytes no reader claims are refused as what they are.

- ``AtlasBundle``: safetensors whose metadata names an ``attention-atlas/`` format, with
  config and vocabulary: our model, rebuilt as written.
- ``BareSafetensors``: any other safetensors (Hugging Face writes ``{"format": "pt"}``):
  a state dict, tensors only.
- ``TorchSave``: a ``torch.save`` zip (``<root>/data.pkl``): a state dict, alone or beside
  the bundle's keys (config, vocabularies); every pickle scanned before ``torch.load``.
- ``AtlasFolderZip``: a zip of a folder whose config.json names an ``attention-atlas/``
  format (``Seq2SeqBundle.save_dir``): our model.
- ``HFFolderZip``: a zip of a Hugging Face model folder (config.json, ``*.safetensors``,
  tokenizer files): a transformers model, no custom code.
- ``BarePickle``: a raw pickle or a pre-1.6 ``torch.save`` file: refused, naming the
  first global it would import, if any.

A state dict becomes one of our architectures through ``models.uploads.rebuild``; a
Hugging Face folder through the family ``models/adapters/hf.py`` registers.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from attention_atlas.i18n import N_, _, later
from attention_atlas.models.uploads import hf_folder, rebuild
from attention_atlas.models.uploads.incoming import Incoming, Summary, Upload, nbytes, nonfinite
from attention_atlas.models.uploads.safety import (
    MB,
    UploadError,
    describe_refused_kind,
    extract_members,
    load_safetensors,
    read_member,
    safetensors_header,
    scan_pickle,
    torch_zip_root,
)

# A Hugging Face family as an upload's summary names it.
HF_FAMILY_NAMES = {"encoder": N_("encoder"), "causal": N_("causal"), "seq2seq": N_("seq2seq")}

OURS = "attention-atlas/"  # the prefix of our bundles' format tags
STATE_KEYS = ("state_dict", "model_state_dict", "model", "weights")  # where .pt files keep their tensors
RISKY_SUFFIXES = (
    ".py",
    ".pyc",
    ".so",
    ".bin",
    ".pt",
    ".pth",
    ".pkl",
    ".pickle",
    ".ckpt",
    ".h5",
    ".msgpack",
    ".joblib",
)


def read(f: Incoming) -> Upload:
    """The upload ``f`` holds, read by the reader that claims its bytes; else one refusal line."""
    for reader in READERS:
        if reader.claims(f):
            return reader.read(f)
    raise UploadError(describe_refused_kind(f.kind, f.data, f.name))


# -- safetensors ------------------------------------------------------------------------------------


def _ours(f: Incoming) -> bool:
    """Safetensors whose metadata names one of our formats (our values are JSON strings: quoted)."""
    return f.header[1].get("format", "").startswith(f'"{OURS}')


class AtlasBundle:
    """Our bundle: everything needed to rebuild the model is in the safetensors metadata."""

    def claims(self, f: Incoming) -> bool:
        return f.kind == "safetensors" and _ours(f)

    def read(self, f: Incoming) -> Upload:
        specs, raw_meta = f.header
        return rebuild.from_bundle(f, f.data, specs, raw_meta, N_("Attention Atlas bundle"))


class BareSafetensors:
    """Any other safetensors file carries no config: a bare state dict."""

    def claims(self, f: Incoming) -> bool:
        return f.kind == "safetensors" and not _ours(f)

    def read(self, f: Incoming) -> Upload:
        return rebuild.from_state(
            f, load_safetensors(f.data, f.name), {}, N_("bare state dict (safetensors)")
        )


# -- torch.save ---------------------------------------------------------------------------------------


class TorchSave:
    """A ``torch.save`` zip: every pickle in it scanned (opcodes read, nothing run), then
    ``torch.load(weights_only=True)``; its state dict alone or beside the bundle's keys."""

    def claims(self, f: Incoming) -> bool:
        return f.kind == "zip" and torch_zip_root(f.members) is not None

    def read(self, f: Incoming) -> Upload:
        self._check(f)
        tensors, meta = self._split(f, self._load(f))
        source = N_("PyTorch state dict + config") if meta.get("config") else N_("bare state dict (PyTorch)")
        return rebuild.from_state(f, tensors, meta, source)

    def _check(self, f: Incoming) -> None:
        """One record folder, no TorchScript, and every pickle's imports allowed."""
        root = torch_zip_root(f.members)
        # torch reads the record folder of the zip's first entry: there must be only one.
        roots = {PurePosixPath(i.filename).parts[0] for i in f.members}
        if roots != {root}:
            raise UploadError(
                _(
                    "{name}: a torch.save file has one record folder, this one has {n}",
                    name=f.name,
                    n=len(roots),
                )
            )
        names = {PurePosixPath(i.filename).relative_to(root).as_posix() for i in f.members}
        if "constants.pkl" in names or any(n.startswith("code/") for n in names):
            raise UploadError(
                _("{name} is a TorchScript archive: it carries code, which is never run", name=f.name)
            )
        with f.open_zip() as zf:
            for info in f.members:  # every pickle in it, not only the one torch reads first
                if info.filename.endswith(".pkl"):
                    if info.file_size > f.limits.max_pickle:
                        raise UploadError(
                            _(
                                "{name}: {member} is {size:,.1f} MB; refused",
                                name=f.name,
                                member=info.filename,
                                size=info.file_size / MB,
                            )
                        )
                    scan_pickle(read_member(zf, info, f.name, f.limits.max_pickle), f.name)

    def _load(self, f: Incoming) -> Any:
        import pickle

        import torch

        try:
            return torch.load(io.BytesIO(f.data), map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as err:
            first = str(err).strip().splitlines()[-1][:200]
            raise UploadError(
                _("{name}: refused by torch's weights-only loader ({error})", name=f.name, error=first)
            ) from err
        except Exception as err:
            raise UploadError(
                _(
                    "{name}: torch could not read it ({kind}: {error})",
                    name=f.name,
                    kind=type(err).__name__,
                    error=err,
                )
            ) from err

    def _split(self, f: Incoming, obj: Any) -> tuple[dict, dict]:
        """``(tensors, the other keys)``: a dict of tensors, or one under a ``STATE_KEYS`` key."""
        import torch

        if not isinstance(obj, dict):
            raise UploadError(
                _("{name} holds a {kind}, not a dict of tensors", name=f.name, kind=type(obj).__name__)
            )

        def all_tensors(d) -> bool:
            return isinstance(d, dict) and bool(d) and all(torch.is_tensor(v) for v in d.values())

        if all_tensors(obj):
            return dict(obj), {}
        for key in STATE_KEYS:
            if all_tensors(obj.get(key)):
                return dict(obj[key]), {k: v for k, v in obj.items() if k != key}
        raise UploadError(
            _(
                "{name} holds no state dict: expected a dict of tensors, or one under "
                "{keys} beside the config",
                name=f.name,
                keys=" / ".join(repr(k) for k in STATE_KEYS),
            )
        )


# -- zipped model folders -------------------------------------------------------------------------------


def _is_folder_zip(f: Incoming) -> bool:
    return f.kind == "zip" and torch_zip_root(f.members) is None


def _ours_folder(f: Incoming) -> bool:
    """A zipped folder whose config.json names one of our formats (``Seq2SeqBundle.save_dir``)."""
    return str(f.folder[2].get("format", "")).startswith(OURS)


def _note_skipped(f: Incoming, skipped: list[str]) -> None:
    risky = [s for s in skipped if s.endswith(RISKY_SUFFIXES)]
    other = [s for s in skipped if s not in risky]
    if risky:
        f.notices.append(f"never opened (code and pickles are not read from a zip): {', '.join(risky)}")
    if other:
        shown = ", ".join(other[:5]) + (", …" if len(other) > 5 else "")
        files = "1 other file that is" if len(other) == 1 else f"{len(other)} other files that are"
        f.notices.append(f"skipped {files} not model data: {shown}")


class AtlasFolderZip:
    """Our bundle folder, zipped: its ``model.safetensors`` read as an ``AtlasBundle``."""

    def claims(self, f: Incoming) -> bool:
        return _is_folder_zip(f) and _ours_folder(f)

    def read(self, f: Incoming) -> Upload:
        members, skipped, __ = f.folder
        _note_skipped(f, skipped)
        weights = members.get("model.safetensors")
        if weights is None:
            raise UploadError(_("{name}: an Attention Atlas folder without model.safetensors", name=f.name))
        with f.open_zip() as zf:
            data = read_member(zf, weights, f.name, f.limits.max_inflated)
        specs, raw_meta = safetensors_header(data, f.name, f.limits)
        return rebuild.from_bundle(f, data, specs, raw_meta, N_("Attention Atlas bundle folder (zip)"))


class HFFolderZip:
    """A Hugging Face folder, zipped: data files only leave the zip, config and weights checked
    against each other on the meta device, then the family's adapter loads it (no custom code)."""

    def claims(self, f: Incoming) -> bool:
        return _is_folder_zip(f) and not _ours_folder(f)

    def read(self, f: Incoming) -> Upload:
        members, skipped, config = f.folder
        _note_skipped(f, skipped)
        f.notices.extend(hf_folder.check_config(config, f.name))
        with tempfile.TemporaryDirectory(prefix="atlas-upload-") as tmp, f.open_zip() as zf:
            folder = Path(tmp)
            extract_members(zf, members, folder, f.name, f.limits)
            name, notices = hf_folder.check_weights(folder, f.name, f.limits)
            f.notices.extend(notices + hf_folder.check_tokenizer(folder, config, f.name))
            family = hf_folder.HF_FAMILIES[name]
            adapter = f.build(lambda: family.adapter(f.model_id, folder, f.device))
        return Upload(self._summary(f, family, adapter), adapter, nbytes(adapter.model))

    def _summary(self, f: Incoming, family: hf_folder.HFFamily, adapter) -> Summary:
        cfg = adapter.config
        if family.family == "seq2seq":
            layers = " + ".join(map(str, hf_folder.encoder_decoder_layers(cfg)))
        else:
            layers = str(adapter.n_layers)
        return Summary(
            file_name=f.name,
            sha256=f.digest,
            size=f.size,
            source=N_("Hugging Face model folder (zip)"),
            architecture=family.name,
            description=later(
                "Hugging Face {family}: {model_class} ({model_type})",
                family=later(HF_FAMILY_NAMES.get(family.family, family.family)),
                model_class=type(adapter.model).__name__,
                model_type=cfg.model_type,
            ),
            view="heads",
            parameters=adapter.model.num_parameters(),
            vocab_size=len(adapter.tokenizer),
            layers=layers,
            heads=adapter.n_heads,
            seq2seq=family.family == "seq2seq",
            model_id=f.model_id,
            compare=family.compare,
            example=family.example,
            nonfinite=nonfinite(adapter.model),
            notices=tuple(f.notices),
            config={
                k: v for k, v in cfg.to_dict().items() if k in hf_folder.CONFIG_RANGES or k == "model_type"
            },
        )


# -- refused formats -----------------------------------------------------------------------------------


class BarePickle:
    """A raw pickle (or torch.save's pre-1.6 format, pickles back to back): never unpickled."""

    def claims(self, f: Incoming) -> bool:
        return f.kind == "pickle"

    def read(self, f: Incoming) -> Upload:
        scan_pickle(f.data, f.name)  # names the first global it would import, if any
        raise UploadError(
            _(
                "{name} is a bare pickle (or a pre-1.6 torch.save file); only torch.save's zip format, "
                "safetensors and zipped model folders are read",
                name=f.name,
            )
        )


READERS = (AtlasBundle(), BareSafetensors(), TorchSave(), AtlasFolderZip(), HFFolderZip(), BarePickle())
