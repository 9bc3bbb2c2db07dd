"""libnxe_sr through its Python binding: every pixel format against a float64 reference of the
whole frame path (tests/sr_reference.py), tiles against untiled runs, reconfiguration on a new
frame size, strides, precision, the format table and the built-in model list, one session shared
by threads, and bad frames, options and model files. Tolerance: 1 LSB (the library computes in
fp32, the reference in float64; a sample at a rounding edge may differ)."""

from __future__ import annotations

import threading

import numpy as np
import nxe
import nxe.models
import nxe.sr
import pytest
import sr_reference as ref
from nxe._binding import ffi, lib, sr_library

ESPCN = "espcn-x2"
EDSR = "edsr-x2"


def frame_planes(fmt: str, w: int, h: int, seed: int = 0) -> list[np.ndarray]:
    """A frame with structure (gradients, edges) and noise, in every plane."""
    rng = np.random.default_rng(seed)
    f = nxe.sr.FORMATS[fmt]
    out = []
    for shape in nxe.sr.plane_shapes(fmt, w, h):
        bits = f.bits
        top = 2**bits - 1
        yy, xx = np.meshgrid(np.linspace(0, 1, shape[0]), np.linspace(0, 1, shape[1]),
                             indexing="ij")
        base = 0.5 + 0.3 * np.sin(7 * xx + 3 * yy) * np.cos(5 * yy)
        if len(shape) == 3:
            base = base[..., None] + 0.1 * np.arange(shape[2])
        noisy = base + 0.1 * rng.standard_normal(shape)
        if f.layout in ("planar", "semiplanar") and len(out) > 0:
            noisy = 0.5 + 0.4 * (noisy - 0.5)  # chroma stays near neutral
        out.append(np.clip(np.round(noisy * top), 16 if bits == 8 else 0, top).astype(f.dtype))
    return out


def assert_close_planes(got, want, lsb=1):
    assert len(got) == len(want)
    for index, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, (index, g.shape, w.shape)
        diff = np.abs(g.astype(np.int32) - w.astype(np.int32))
        assert diff.max() <= lsb, f"plane {index}: max diff {diff.max()} LSB"
        assert diff.mean() < 0.02, f"plane {index}: mean diff {diff.mean():.4f} LSB"


@pytest.mark.parametrize("fmt", list(nxe.sr.FORMATS))
def test_luma_model_matches_reference_for_every_format(fmt):
    up = nxe.sr.Upscaler(ESPCN)
    planes = frame_planes(fmt, 37, 23)
    got = up.upscale_planes(planes, fmt)
    want = ref.upscale_frame(ESPCN, 1, 2, planes, fmt)
    assert_close_planes(got, want)


@pytest.mark.parametrize("fmt", ["gray8", "yuv420p", "yuv422p10", "nv12", "rgb24", "bgra"])
def test_rgb_model_matches_reference(fmt):
    up = nxe.sr.Upscaler(EDSR)
    planes = frame_planes(fmt, 19, 14, seed=1)
    got = up.upscale_planes(planes, fmt, matrix="bt709", range="limited")
    want = ref.upscale_frame(EDSR, 3, 2, planes, fmt, matrix="bt709", full=False)
    assert_close_planes(got, want)


@pytest.mark.parametrize("matrix,color_range", [("bt601", "full"), ("bt709", "full"),
                                                ("bt709", "limited")])
def test_stated_colour_is_used(matrix, color_range):
    up = nxe.sr.Upscaler(ESPCN)
    planes = frame_planes("rgb24", 21, 17, seed=2)
    got = up.upscale_planes(planes, "rgb24", matrix=matrix, range=color_range)
    want = ref.upscale_frame(ESPCN, 1, 2, planes, "rgb24", matrix=matrix,
                             full=color_range == "full")
    assert_close_planes(got, want)


@pytest.mark.parametrize("model", ["espcn-x3", "espcn-x4", "edsr-x4"])
def test_other_scales(model):
    up = nxe.sr.Upscaler(model)
    channels, scale = up.channels, up.scale
    assert scale == int(model[-1])
    planes = frame_planes("yuv420p", 13, 11, seed=3)
    got = up.upscale_planes(planes, "yuv420p")
    assert_close_planes(got, ref.upscale_frame(model, channels, scale, planes, "yuv420p"))


@pytest.mark.parametrize("model,tile,size,precision", [
    (ESPCN, 16, (61, 47), "fp32"), (ESPCN, 9, (30, 29), "fp32"), (EDSR, 80, (130, 85), "fp32"),
    (ESPCN, 16, (61, 47), "relax"), (EDSR, 80, (130, 85), "relax")])
@pytest.mark.parametrize("winograd", ["off", "on"])
def test_tiled_result_equals_untiled(model, tile, size, precision, winograd, monkeypatch):
    """With direct convolutions every output comes from its receptive field alone, which the
    overlap covers: tiles equal the whole frame byte for byte. Winograd's rounding also
    depends on where its 4x4 tiles fall, so tiles may differ from the whole frame in the last
    bits of a few values: at most one code value, at a small share of samples."""
    monkeypatch.setenv("NXE_WINOGRAD", winograd)
    w, h = size
    planes = frame_planes("yuv420p", w, h, seed=4)
    whole = nxe.sr.Upscaler(model, tile=-1, precision=precision).upscale_planes(planes,
                                                                                "yuv420p")
    tiled = nxe.sr.Upscaler(model, tile=tile, precision=precision)
    parts = tiled.upscale_planes(planes, "yuv420p")
    assert tiled.info()["tiles"] > 2
    for a, b in zip(whole, parts):
        if winograd == "off":
            np.testing.assert_array_equal(a, b)
        else:
            difference = np.abs(a.astype(np.int16) - b.astype(np.int16))
            assert difference.max() <= 1
            assert np.count_nonzero(difference) <= 0.001 * difference.size


def test_overlap_below_the_receptive_radius_shows_seams():
    """The exactness above depends on the overlap: without it, tile edges differ."""
    planes = frame_planes("gray8", 61, 47, seed=4)
    whole = nxe.sr.Upscaler(ESPCN, tile=-1).upscale_planes(planes, "gray8")[0]
    seamed = nxe.sr.Upscaler(ESPCN, tile=16, overlap=0).upscale_planes(planes, "gray8")[0]
    assert np.any(whole != seamed)


def test_new_frame_size_reconfigures_without_reopening():
    up = nxe.sr.Upscaler(ESPCN, tile=32)
    sizes = [(40, 30), (97, 61), (40, 30), (33, 70)]
    for index, (w, h) in enumerate(sizes):
        planes = frame_planes("yuv420p", w, h, seed=index)
        got = up.upscale_planes(planes, "yuv420p")
        fresh = nxe.sr.Upscaler(ESPCN, tile=32).upscale_planes(planes, "yuv420p")
        for a, b in zip(got, fresh):
            np.testing.assert_array_equal(a, b)
    info = up.info()
    assert info["frames"] == 4
    # 40x30 fits one 40x30 tile; 97x61 needs 32x...; 33x70 another shape: every change compiles.
    assert info["reconfigurations"] == 4


def test_packed_orders_and_nv12_agree_with_their_planar_twins():
    up = nxe.sr.Upscaler(ESPCN)
    rgba = frame_planes("rgba", 29, 18, seed=5)[0]
    out_rgba = up.upscale_planes([rgba], "rgba")[0]
    out_bgra = up.upscale_planes([rgba[..., [2, 1, 0, 3]]], "bgra")[0]
    np.testing.assert_array_equal(out_rgba, out_bgra[..., [2, 1, 0, 3]])
    y, u, v = frame_planes("yuv420p", 29, 18, seed=6)
    planar = up.upscale_planes([y, u, v], "yuv420p")
    nv12 = up.upscale_planes([y, np.stack([u, v], axis=-1)], "nv12")
    np.testing.assert_array_equal(planar[0], nv12[0])
    np.testing.assert_array_equal(np.stack(planar[1:], axis=-1), nv12[1])


def test_padded_and_bottom_up_strides():
    up = nxe.sr.Upscaler(ESPCN)
    planes = frame_planes("yuv422p", 31, 20, seed=7)
    plain = up.upscale_planes(planes, "yuv422p")
    padded = [np.pad(p, ((0, 0), (0, 13)))[:, :p.shape[1]] for p in planes]
    assert padded[0].strides[0] != padded[0].shape[1]
    for a, b in zip(plain, up.upscale_planes(padded, "yuv422p")):
        np.testing.assert_array_equal(a, b)
    flipped = [np.flipud(np.flipud(p).copy()) for p in planes]  # negative row strides
    assert flipped[0].strides[0] < 0
    for a, b in zip(plain, up.upscale_planes(flipped, "yuv422p")):
        np.testing.assert_array_equal(a, b)


def test_relax_precision_stays_near_fp32():
    planes = frame_planes("gray8", 64, 48, seed=8)
    exact = nxe.sr.Upscaler(ESPCN).upscale_planes(planes, "gray8")[0].astype(int)
    relaxed = nxe.sr.Upscaler(ESPCN, precision="relax")
    assert relaxed.info()["precision"] == "relax"
    diff = np.abs(relaxed.upscale_planes(planes, "gray8")[0].astype(int) - exact)
    assert diff.max() <= 4 and diff.mean() < 0.5, (diff.max(), diff.mean())


def test_info_and_output_size():
    up = nxe.sr.Upscaler("espcn-x3", threads=1, tile=100, overlap=6)
    info = up.info()
    assert (info["scale"], info["channels"], info["tile_size"], info["tile_overlap"]) == \
        (3, 1, 100, 6)
    with nxe.Model(nxe.sr.model_path("espcn-x3")) as model:
        assert info["receptive_radius"] == model.metadata["receptive_radius"]
        assert info["name"] == model.metadata["name"]
    w, h = ffi.new("int32_t *"), ffi.new("int32_t *")
    with up._session() as session:
        assert sr_library().nxe_sr_output_size(session, 7, 5, w, h) == lib.NXE_OK
    assert (w[0], h[0]) == (21, 15)
    edsr = nxe.sr.Upscaler("edsr-x4").info()
    assert edsr["tile_size"] == 256 and edsr["tile_overlap"] == edsr["receptive_radius"]


def test_every_format_is_supported_and_named():
    sr = sr_library()
    up = nxe.sr.Upscaler(EDSR)
    with up._session() as session:
        for name, f in nxe.sr.FORMATS.items():
            assert ffi.string(sr.nxe_sr_format_name(f.code)).decode() == name
            assert sr.nxe_sr_format_supported(session, f.code) == lib.NXE_OK
        assert sr.nxe_sr_format_name(99) == ffi.NULL
        assert sr.nxe_sr_format_supported(session, 99) == lib.NXE_ERROR_INVALID_ARGUMENT


# ---- bad input ----

def raw_frame(fmt: str, w: int, h: int, planes):
    frame = ffi.new("nxe_sr_frame *")
    frame.struct_size = ffi.sizeof("nxe_sr_frame")
    frame.format = nxe.sr.FORMATS[fmt].code
    frame.width, frame.height = w, h
    for index, p in enumerate(planes):
        frame.data[index] = ffi.cast("void *", p.ctypes.data)
        frame.strides[index] = p.strides[0]
    return frame


def sr_last_error() -> str:
    return ffi.string(sr_library().nxe_sr_last_error()).decode()


def process_status(up, frame_in, frame_out):
    with up._session() as session:
        status = sr_library().nxe_sr_process(session, frame_in, frame_out)
    return status, sr_last_error()


@pytest.fixture()
def good_frames():
    planes_in = frame_planes("yuv420p", 20, 10)
    planes_out = [np.zeros(s, np.uint8) for s in nxe.sr.plane_shapes("yuv420p", 40, 20)]
    return planes_in, planes_out


@pytest.mark.parametrize("damage,status,words", [
    (lambda i, o: setattr(i, "data", [i.data[0], ffi.NULL, i.data[2], ffi.NULL]),
     "NXE_ERROR_INVALID_ARGUMENT", "plane 1 of a yuv420p frame is NULL"),
    (lambda i, o: i.strides.__setitem__(0, 19), "NXE_ERROR_INVALID_ARGUMENT",
     "smaller than its row"),
    (lambda i, o: i.strides.__setitem__(2, -9), "NXE_ERROR_INVALID_ARGUMENT",
     "smaller than its row"),
    (lambda i, o: setattr(o, "height", 19), "NXE_ERROR_SHAPE_MISMATCH", "needs 40x20"),
    (lambda i, o: setattr(o, "format", nxe.sr.FORMATS["yuv422p"].code),
     "NXE_ERROR_INVALID_ARGUMENT", "must match"),
    (lambda i, o: setattr(i, "format", 0), "NXE_ERROR_UNSUPPORTED", "unknown pixel format"),
    (lambda i, o: setattr(i, "format", len(nxe.sr.FORMATS) + 1), "NXE_ERROR_UNSUPPORTED",
     "unknown pixel format"),
    (lambda i, o: setattr(i, "width", 0), "NXE_ERROR_INVALID_ARGUMENT", "sides must be"),
    (lambda i, o: setattr(i, "height", 1 << 20), "NXE_ERROR_INVALID_ARGUMENT", "sides must be"),
    (lambda i, o: setattr(i, "color_matrix", 7), "NXE_ERROR_INVALID_ARGUMENT", "color_matrix"),
    (lambda i, o: setattr(i, "color_range", -1), "NXE_ERROR_INVALID_ARGUMENT", "color_range"),
    (lambda i, o: setattr(i, "struct_size", 8), "NXE_ERROR_INVALID_ARGUMENT", "struct_size"),
    # Sides at the int32 limits, and an output side beyond the frame limit.
    (lambda i, o: setattr(i, "width", 2**31 - 1), "NXE_ERROR_INVALID_ARGUMENT", "sides must be"),
    (lambda i, o: setattr(i, "height", -2**31), "NXE_ERROR_INVALID_ARGUMENT", "sides must be"),
    (lambda i, o: (setattr(i, "width", 32768), [i.strides.__setitem__(p, 32768) for p in range(3)],
                   setattr(o, "width", 65536)),
     "NXE_ERROR_INVALID_ARGUMENT", "output frame is 65536x20; sides must be 1 to 32768"),
    # Strides whose rows reach past the address space: stride x rows overflows int64, or a
    # bottom-up plane reaches below address 0.
    (lambda i, o: i.strides.__setitem__(0, 2**62), "NXE_ERROR_INVALID_ARGUMENT",
     "plane 0 stride 4611686018427387904 over 10 rows reaches outside the address space"),
    (lambda i, o: i.strides.__setitem__(0, 2**63 - 1), "NXE_ERROR_INVALID_ARGUMENT",
     "reaches outside the address space"),
    (lambda i, o: i.strides.__setitem__(1, -(2**63 - 1)), "NXE_ERROR_INVALID_ARGUMENT",
     "plane 1 stride -9223372036854775807 over 5 rows reaches outside"),
    (lambda i, o: i.strides.__setitem__(2, -2**55), "NXE_ERROR_INVALID_ARGUMENT",
     "plane 2 stride -36028797018963968 over 5 rows reaches outside"),
    (lambda i, o: o.strides.__setitem__(0, 2**61), "NXE_ERROR_INVALID_ARGUMENT",
     "output plane 0 stride 2305843009213693952 over 20 rows reaches outside"),
    (lambda i, o: i.strides.__setitem__(0, -2**63), "NXE_ERROR_INVALID_ARGUMENT",
     "smaller than its row"),
])
def test_bad_frames_get_a_status_and_leave_the_output_alone(good_frames, damage, status, words):
    planes_in, planes_out = good_frames
    up = nxe.sr.Upscaler(ESPCN)
    frame_in = raw_frame("yuv420p", 20, 10, planes_in)
    frame_out = raw_frame("yuv420p", 40, 20, planes_out)
    damage(frame_in, frame_out)
    code, message = process_status(up, frame_in, frame_out)
    assert code == getattr(lib, status), message
    assert words in message
    assert all(not p.any() for p in planes_out)
    # The session still works afterwards.
    ok_in = raw_frame("yuv420p", 20, 10, planes_in)
    ok_out = raw_frame("yuv420p", 40, 20, planes_out)
    assert process_status(up, ok_in, ok_out)[0] == lib.NXE_OK


@pytest.mark.parametrize("stride", [2**63 - 1, -(2**63 - 1)])
def test_one_row_frame_takes_strides_at_the_int64_limits(stride):
    """Rows past the first are never reached in a one-row frame, so any stride of at least a
    row's bytes is valid there, up to the int64 limits either way."""
    up = nxe.sr.Upscaler(ESPCN)
    planes_in = frame_planes("yuv444p", 17, 1, seed=3)
    want = up.upscale_planes(planes_in, "yuv444p")
    planes_out = [np.zeros(s, np.uint8) for s in nxe.sr.plane_shapes("yuv444p", 34, 2)]
    frame_in = raw_frame("yuv444p", 17, 1, planes_in)
    frame_out = raw_frame("yuv444p", 34, 2, planes_out)
    for p in range(3):
        frame_in.strides[p] = stride
    code, message = process_status(up, frame_in, frame_out)
    assert code == lib.NXE_OK, message
    for got, expected in zip(planes_out, want):
        np.testing.assert_array_equal(got, expected)


def test_null_arguments():
    sr = sr_library()
    up = nxe.sr.Upscaler(ESPCN)
    frame = raw_frame("gray8", 4, 4, [np.zeros((4, 4), np.uint8)])
    assert sr.nxe_sr_process(ffi.NULL, frame, frame) == lib.NXE_ERROR_INVALID_ARGUMENT
    with up._session() as session:
        assert sr.nxe_sr_process(session, ffi.NULL, frame) == lib.NXE_ERROR_INVALID_ARGUMENT
        assert sr.nxe_sr_process(session, frame, ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
    out = ffi.new("nxe_sr **")
    assert sr.nxe_sr_open(ffi.NULL, ffi.NULL, out) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert out[0] == ffi.NULL
    assert sr.nxe_sr_open(b"espcn-x2", ffi.NULL, ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert sr.nxe_sr_get_info(ffi.NULL, ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
    sr.nxe_sr_release(ffi.NULL)
    name = ffi.new("const char **")
    assert sr.nxe_sr_builtin_name(99, name) == lib.NXE_ERROR_NOT_FOUND and name[0] == ffi.NULL


@pytest.mark.parametrize("kwargs,words", [
    (dict(tile=7), "tile_size 7"),
    (dict(tile=20000), "tile_size 20000"),
    (dict(tile=2**31 - 1), "tile_size 2147483647; expected 8 to 16384"),
    (dict(tile=8, overlap=4), "leaves nothing between overlaps of 4.*must be 0 to 3"),
    (dict(overlap=-5), "tile_overlap -5; expected 0 to 511"),
    (dict(threads=-1), "num_threads"),
    # 2 * overlap used to wrap in int32: these opened, then the first tiled frame crashed.
    (dict(overlap=2**30), "overlaps of 1073741824.*must be 0 to 511"),
    (dict(overlap=2**31 - 1), "overlaps of 2147483647.*must be 0 to 511"),
    (dict(tile=24, overlap=12), "overlaps of 12.*must be 0 to 11"),
    (dict(tile=-1, overlap=8192), "tile_overlap 8192; expected 0 to 8191"),
    # Beyond the C field's int32: refused in Python with the option's name.
    (dict(overlap=2**31), "overlap 2147483648 does not fit"),
    (dict(tile=-2**40), "tile -1099511627776 does not fit"),
    (dict(threads=2**63), "threads 9223372036854775808 does not fit"),
])
def test_bad_options(kwargs, words):
    with pytest.raises(nxe.InvalidArgumentError, match=words):
        nxe.sr.Upscaler(ESPCN, **kwargs)


@pytest.mark.parametrize("tile,overlap", [(24, 11), (10, 4), (-1, 8191)])
def test_largest_overlap_a_tile_allows_still_matches_untiled(tile, overlap):
    """At the top of its range the overlap leaves one pixel per tile of its own; with overlap
    at least the receptive radius the tiles give the untiled frame exactly."""
    planes = frame_planes("gray8", 45, 30, seed=9)
    whole = nxe.sr.Upscaler(ESPCN, tile=-1).upscale_planes(planes, "gray8")[0]
    up = nxe.sr.Upscaler(ESPCN, tile=tile, overlap=overlap)
    np.testing.assert_array_equal(up.upscale_planes(planes, "gray8")[0], whole)
    assert up.info()["tile_overlap"] == overlap
    if tile > 0:
        assert up.info()["tiles"] > 4


def test_bad_precision_is_refused_in_c():
    options = ffi.new("nxe_sr_options *")
    options.struct_size = ffi.sizeof("nxe_sr_options")
    options.precision = 5
    out = ffi.new("nxe_sr **")
    assert sr_library().nxe_sr_open(b"espcn-x2", options, out) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert "precision 5" in sr_last_error()


def test_unknown_and_missing_models(tmp_path):
    with pytest.raises(nxe.NotFoundError, match="no built-in SR model named 'espcn-x9'.*espcn-x2"):
        nxe.sr.Upscaler("espcn-x9")
    with pytest.raises(nxe.IoError):
        nxe.sr.Upscaler(str(tmp_path / "absent.nxm"))
    corrupt = tmp_path / "corrupt.nxm"
    data = bytearray(nxe.sr.model_path(ESPCN).read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    with pytest.raises(nxe.FormatError):
        nxe.sr.Upscaler(str(corrupt))


def save_variant(tmp_path, name, metadata, graph=None):
    if graph is None:
        with nxe.Model(nxe.sr.model_path(ESPCN)) as model:
            graph = model.graph()
    path = tmp_path / f"{name}.nxm"
    nxe.save_model(graph, path, metadata=metadata)
    return str(path)


def espcn_metadata(**changes):
    with nxe.Model(nxe.sr.model_path(ESPCN)) as model:
        meta = dict(model.metadata)
    meta.update(changes)
    return {k: v for k, v in meta.items() if v is not None}


@pytest.mark.parametrize("changes,words", [
    (dict(task="classification"), "is not an SR model"),
    (dict(task=None), "is not an SR model"),
    (dict(scale=0), "\"scale\" 0"),
    (dict(scale=2.5), "\"scale\" must be an integer"),
    (dict(scale="2"), "\"scale\" must be an integer"),
    (dict(channels=2), "\"channels\" 2"),
    (dict(receptive_radius=-1), "\"receptive_radius\" -1"),
    (dict(input=None), "lacks the metadata"),
    (dict(name=7), "\"name\" must be a string"),
])
def test_models_with_bad_metadata_are_refused(tmp_path, changes, words):
    path = save_variant(tmp_path, "bad", espcn_metadata(**changes))
    with pytest.raises(nxe.FormatError, match=words):
        nxe.sr.Upscaler(path)


def test_nested_unknown_metadata_is_skipped(tmp_path):
    meta = espcn_metadata(extra={"deep": [[[{"a": [1, 2, {"b": None}]}]]], "s": "\"\\u00e9"},
                          flags=[True, False, None, -1.5e3])
    up = nxe.sr.Upscaler(save_variant(tmp_path, "nested", meta))
    assert up.scale == 2


def test_model_whose_output_does_not_match_its_scale_is_refused(tmp_path):
    path = save_variant(tmp_path, "wrong-scale", espcn_metadata(scale=3))
    up = nxe.sr.Upscaler(path)
    with pytest.raises(nxe.FormatError, match="not f32"):
        up.upscale(np.zeros((8, 8), np.uint8))


def test_builtin_models_are_the_installed_model_files():
    """The library's list, compiled in from the build's one list, and the model files installed
    beside it are the same names: a listed model without a file or a file nobody lists fails."""
    names = nxe.sr.builtin_models()
    assert names and len(set(names)) == len(names)
    folder = nxe.sr.model_path(names[0]).parent
    stems = {path.stem for path in folder.glob("*.nxm")}
    # Besides them, only int8 variants of listed models (models.txt's "int8" word).
    variants = {stem for stem in stems if stem.endswith("-int8")}
    assert sorted(stems - variants) == sorted(names)
    assert {stem.removesuffix("-int8") for stem in variants} <= set(names)


def test_every_builtin_model_is_installed_and_opens():
    for name in nxe.sr.builtin_models():
        assert nxe.sr.model_path(name).is_file(), name
        info = nxe.sr.Upscaler(name).info()
        assert info["name"] == name and info["scale"] == int(name[-1])
        assert info["channels"] == (1 if name.startswith("espcn") else 3)
        radius = (nxe.models.espcn_receptive_radius if name.startswith("espcn")
                  else nxe.models.edsr_receptive_radius)(info["scale"])
        assert info["receptive_radius"] == radius


# ---- the format table ----

def test_format_table_agrees_with_the_format_names():
    """nxe_sr_format_info's facts against what FFmpeg's names say: 420/422/444 and nv12 give the
    chroma subsampling, a "10" suffix ten bits in two bytes, a packed name its channel order."""
    subsampling = {"420": (2, 2), "422": (2, 1), "444": (1, 1)}
    assert [f.code for f in nxe.sr.FORMATS.values()] == list(range(1, len(nxe.sr.FORMATS) + 1))
    for name, f in nxe.sr.FORMATS.items():
        assert f.planes == len(f.plane_samples), name
        assert (f.bits, f.dtype.itemsize) == ((10, 2) if name.endswith("10") else (8, 1)), name
        if f.layout == "gray":
            assert (f.planes, f.chroma, f.plane_samples) == (1, (1, 1), (1,)), name
        elif f.layout == "planar":
            assert name.startswith("yuv") and f.plane_samples == (1, 1, 1), name
            assert f.chroma == subsampling[name[3:6]], name
        elif f.layout == "semiplanar":
            assert name == "nv12" and (f.chroma, f.plane_samples) == ((2, 2), (1, 2))
        else:
            assert f.layout == "packed", name
            channels = name.removesuffix("24")
            assert (f.planes, f.plane_samples) == (1, (len(channels),)), name
            for channel, index in zip("rgba", f.rgba):
                assert (channels[index] if index is not None else None) == (
                    channel if channel in channels else None), name
        if f.layout != "packed":
            assert f.rgba == (None, None, None, None), name


@pytest.mark.parametrize("fmt", list(nxe.sr.FORMATS))
def test_each_plane_needs_the_row_the_format_table_describes(fmt):
    """A stride of one byte less than the row nxe.sr derives from the table is refused for
    every plane: the Python side and the library read the table alike."""
    planes_in = frame_planes(fmt, 9, 7)
    planes_out = [np.zeros(s, nxe.sr.FORMATS[fmt].dtype) for s in nxe.sr.plane_shapes(fmt, 18, 14)]
    up = nxe.sr.Upscaler(ESPCN)
    for plane in range(len(planes_in)):
        frame_in = raw_frame(fmt, 9, 7, planes_in)
        frame_in.strides[plane] -= 1
        code, message = process_status(up, frame_in, raw_frame(fmt, 18, 14, planes_out))
        assert code == lib.NXE_ERROR_INVALID_ARGUMENT, message
        assert f"input plane {plane} stride" in message
    ok = process_status(up, raw_frame(fmt, 9, 7, planes_in), raw_frame(fmt, 18, 14, planes_out))
    assert ok[0] == lib.NXE_OK, ok[1]


def test_format_info_refuses_bad_arguments():
    sr = sr_library()
    desc = ffi.new("nxe_sr_format_desc *")
    size = ffi.sizeof("nxe_sr_format_desc")
    desc.struct_size, desc.planes = size, 7
    for code in (0, len(nxe.sr.FORMATS) + 1):
        assert sr.nxe_sr_format_info(code, desc) == lib.NXE_ERROR_NOT_FOUND
        assert (desc.struct_size, desc.planes, desc.name) == (size, 0, ffi.NULL)
        assert "not a pixel format" in sr_last_error()
    assert sr.nxe_sr_format_info(1, ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
    desc.struct_size, desc.planes = 8, 7
    assert sr.nxe_sr_format_info(1, desc) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert desc.planes == 7 and "struct_size is 8" in sr_last_error()


# ---- errors and threads ----

def test_sr_errors_have_their_own_message_slot(tmp_path):
    """A failed libnxe_sr call leaves libnxe's message alone, and a libnxe failure it reports
    is named after its own words."""
    sr = sr_library()
    assert lib.nxe_dtype_info(999, ffi.NULL, ffi.NULL) != lib.NXE_OK
    core_message = ffi.string(lib.nxe_last_error()).decode()
    name = ffi.new("const char **")
    assert sr.nxe_sr_builtin_name(99, name) == lib.NXE_ERROR_NOT_FOUND
    assert "index 99" in sr_last_error()
    assert ffi.string(lib.nxe_last_error()).decode() == core_message
    with pytest.raises(nxe.IoError) as caught:
        nxe.sr.Upscaler(str(tmp_path / "absent.nxm"))
    core_message = ffi.string(lib.nxe_last_error()).decode()
    assert str(caught.value) == sr_last_error()
    assert str(caught.value).startswith("nxe_sr_open: cannot open model")
    assert str(caught.value).endswith(": " + core_message)


def test_one_upscaler_shared_by_threads_matches_single_threaded_runs():
    """Four threads on one session with frames of three sizes and two formats interleaved, so
    that calls keep reconfiguring it: every output equals the same frame's output from a
    session used by one thread."""
    sizes, formats = [(40, 30), (97, 61), (33, 70)], ["yuv420p", "rgba"]
    frames = [(formats[i % 2], frame_planes(formats[i % 2], *sizes[i % 3], seed=i))
              for i in range(6)]
    alone = nxe.sr.Upscaler(ESPCN, tile=32, threads=2)
    want = [alone.upscale_planes(planes, fmt) for fmt, planes in frames]
    shared = nxe.sr.Upscaler(ESPCN, tile=32, threads=2)
    threads, rounds = 4, 3
    start = threading.Barrier(threads)
    outcomes = []  # (thread, frame, equal); a thread that raises leaves its count short

    def work(index):
        start.wait(timeout=60)
        for step in range(rounds * len(frames)):
            i = (index + step) % len(frames)
            got = shared.upscale_planes(frames[i][1], frames[i][0])
            outcomes.append((index, i, all(np.array_equal(g, w) for g, w in zip(got, want[i]))))

    workers = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    assert not any(worker.is_alive() for worker in workers), "a thread did not finish"
    assert len(outcomes) == threads * rounds * len(frames)
    assert [(t, i) for t, i, equal in outcomes if not equal] == []
    assert shared.info()["frames"] == threads * rounds * len(frames)


def test_close_waits_for_a_call_in_progress():
    up = nxe.sr.Upscaler(ESPCN)
    with up._session():
        closer = threading.Thread(target=up.close, daemon=True)
        closer.start()
        closer.join(timeout=0.5)
        assert closer.is_alive()
    closer.join(timeout=60)
    assert not closer.is_alive()
    with pytest.raises(ValueError, match="closed"):
        up.info()
