"""`nxe upscale` and what it stands on: nxe's own PNG reader and writer against Pillow, Y4M
streams, PSNR/SSIM against scikit-image, and the command on images and video (its output is
libnxe_sr's, byte for byte)."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import nxe.sr
import pytest
from image_testing import textured_picture
from nxe import images, metrics
from PIL import Image
from skimage.metrics import peak_signal_noise_ratio, structural_similarity


def photo(h=45, w=67, channels=3, seed=0):
    return textured_picture(h, w, channels, seed)


@pytest.mark.parametrize("mode,channels", [("L", 1), ("RGB", 3), ("RGBA", 4)])
@pytest.mark.parametrize("optimize", [False, True])
def test_png_reader_reads_what_pillow_writes(tmp_path, mode, channels, optimize):
    image = photo(channels=channels)
    path = tmp_path / "p.png"
    Image.fromarray(image, mode).save(path, optimize=optimize)  # optimize tries every filter
    np.testing.assert_array_equal(images.read_png(path), image)


def test_png_reader_expands_palettes_gray_alpha_and_16_bits(tmp_path):
    image = photo()
    palette_image = Image.fromarray(image).quantize(colors=13)
    palette_image.save(tmp_path / "pal.png")
    np.testing.assert_array_equal(images.read_png(tmp_path / "pal.png"),
                                  np.asarray(palette_image.convert("RGB")))
    two_bit = Image.fromarray(image).quantize(colors=4)
    two_bit.save(tmp_path / "pal2.png", bits=2)
    np.testing.assert_array_equal(images.read_png(tmp_path / "pal2.png"),
                                  np.asarray(two_bit.convert("RGB")))
    gray_alpha = Image.fromarray(photo(channels=4)).convert("LA")
    gray_alpha.save(tmp_path / "la.png")
    np.testing.assert_array_equal(images.read_png(tmp_path / "la.png"),
                                  np.asarray(gray_alpha.convert("RGBA")))
    deep = (photo(channels=1).astype(np.uint16) * 257 + 3)
    Image.fromarray(deep).save(tmp_path / "deep.png")
    np.testing.assert_array_equal(images.read_png(tmp_path / "deep.png"),
                                  np.rint(deep / 257).astype(np.uint8))  # nearest 8-bit value


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_png_writer_is_read_back_by_pillow(tmp_path, channels):
    image = photo(channels=channels)
    images.write_png(tmp_path / "w.png", image)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "w.png")), image)


def test_bad_png_files_raise_value_errors(tmp_path):
    good = tmp_path / "good.png"
    images.write_png(good, photo())
    data = good.read_bytes()
    cases = {
        "not a PNG": b"GIF89a" + data[6:],
        "fails its CRC": data[:40] + bytes([data[40] ^ 1]) + data[41:],
        "truncated": data[:60],
        "without IHDR or image data": data[:33],
    }
    for words, body in cases.items():
        path = tmp_path / "bad.png"
        path.write_bytes(body)
        with pytest.raises(ValueError, match=words):
            images.read_png(path)


def png_with_image_data(image_data: bytes) -> bytes:
    """A 4x3 gray PNG whose IDAT holds `image_data`, every CRC correct."""
    def chunk(kind, body):
        crc = zlib.crc32(kind + body).to_bytes(4, "big")
        return len(body).to_bytes(4, "big") + kind + body + crc
    header = (4).to_bytes(4, "big") + (3).to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    return (images.PNG_SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", image_data)
            + chunk(b"IEND", b""))


# Found by tools/fuzz_images.py: IDAT data that is not zlib escaped read_png as zlib.error.
@pytest.mark.parametrize("image_data", [
    b"\x00\x01\x02\x03",                                   # incorrect header check
    zlib.compress(bytes(15))[:-1] + b"\x00",                  # incorrect data check
    b"\x78\x9c\x07\x00",                                     # invalid block type
    b"\x0f\x04\x00\x00",                                     # unknown compression method
])
def test_png_image_data_that_does_not_decompress_raises_value_error(tmp_path, image_data):
    path = tmp_path / "bad.png"
    path.write_bytes(png_with_image_data(image_data))
    with pytest.raises(ValueError, match="PNG image data does not decompress"):
        images.read_png(path)
    with pytest.raises(ValueError, match="cannot decode the image"):
        images.read_image(path)


def jpeg_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(photo(channels=3)).save(buffer, "JPEG", quality=80)
    return buffer.getvalue()


def jpeg_sized(width: int, height: int) -> bytes:
    """A JPEG whose frame header (SOF0) claims width x height."""
    data = bytearray(jpeg_bytes())
    at = data.index(b"\xff\xc0") + 5
    data[at:at + 4] = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return bytes(data)


# Found by tools/fuzz_images.py: Pillow reported these as OSError (truncated or broken data),
# UnidentifiedImageError or DecompressionBombError; the reader's contract is ValueError.
@pytest.mark.parametrize("name,body,words", [
    ("truncated.jpg", lambda: jpeg_bytes()[:300], "cannot decode the image: OSError"),
    ("garbage.jpg", lambda: b"\xff\xd8\xff" + bytes(40), "cannot decode the image"),
    ("not_an_image.jpg", lambda: b"GIF87a" + bytes(10), "UnidentifiedImageError"),
    ("bad_zlib.png", lambda: png_with_image_data(b"\x00\x01\x02\x03"), "cannot decode"),
    ("bad_crc.png", lambda: images.PNG_SIGNATURE + bytes(13) + b"IHDR" + bytes(17),
     "cannot decode the image"),
    ("huge.jpg", lambda: jpeg_sized(65535, 65535), "DecompressionBombError"),
    ("empty.jpg", lambda: jpeg_sized(0, 5), "cannot decode the image"),
])
def test_corrupt_files_read_through_pillow_raise_value_errors(tmp_path, name, body, words):
    path = tmp_path / name
    path.write_bytes(body())
    with pytest.raises(ValueError, match=words):
        images.read_image(path)


def test_a_missing_image_file_is_still_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        images.read_image(tmp_path / "absent.jpg")


def test_y4m_round_trip():
    header = images.Y4mHeader(37, 23, "yuv420p10", "30000:1001", True, ("Ip",))
    frames = [[np.random.default_rng(i).integers(0, 1024, s).astype(np.uint16)
               for s in nxe.sr.plane_shapes("yuv420p10", 37, 23)] for i in range(3)]
    stream = io.BytesIO()
    images.write_y4m_header(stream, header)
    for planes in frames:
        images.write_y4m_frame(stream, planes)
    stream.seek(0)
    back = images.read_y4m_header(stream)
    assert (back.width, back.height, back.format, back.rate, back.full_range) == \
        (37, 23, "yuv420p10", "30000:1001", True)
    for want, got in zip(frames, images.y4m_frames(stream, back), strict=True):
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("text,words", [
    (b"P6\n", "not a Y4M"), (b"YUV4MPEG2 W10 H0\n", "bad frame size"),
    (b"YUV4MPEG2 W10 H10 C411\n", "C411 is not supported"),
    (b"YUV4MPEG2 W4 H4 C420jpeg\nFRAME\n" + bytes(5), "truncated frame"),
    (b"YUV4MPEG2 W4 H4 C420jpeg\nFRAMX\n", "expected a FRAME"),
])
def test_bad_y4m_streams_raise_value_errors(text, words):
    stream = io.BytesIO(text)
    with pytest.raises(ValueError, match=words):
        header = images.read_y4m_header(stream)
        list(images.y4m_frames(stream, header))


def test_metrics_agree_with_scikit_image():
    a = photo(60, 70, 1, seed=1).astype(np.float64)
    b = np.clip(a + np.random.default_rng(2).normal(0, 6, a.shape), 0, 255)
    assert metrics.psnr(a, b, border=2) == pytest.approx(
        peak_signal_noise_ratio(a[2:-2, 2:-2], b[2:-2, 2:-2], data_range=255), abs=1e-9)
    want = structural_similarity(a, b, data_range=255, gaussian_weights=True, sigma=1.5,
                                 use_sample_covariance=False)
    # scikit-image averages over the whole (reflect-padded) plane minus a 5-pixel margin, nxe
    # over the 'valid' window positions: the same positions.
    assert metrics.ssim(a, b) == pytest.approx(want, abs=1e-6)
    assert metrics.ssim(a, a) == pytest.approx(1.0)


def nxe_cli(*args):
    """Runs the installed `nxe` executable, the one beside this Python."""
    nxe = Path(sys.executable).with_name("nxe")
    assert nxe.is_file(), f"no nxe executable at {nxe}: install the package (pip install .)"
    return subprocess.run([str(nxe), *map(str, args)], capture_output=True, text=True,
                          timeout=600)


def test_upscale_image_writes_what_the_library_computes(tmp_path):
    image = photo(channels=3)
    images.write_png(tmp_path / "in.png", image)
    result = nxe_cli("upscale", tmp_path / "in.png", "-o", tmp_path / "out.png",
                     "--model", "espcn-x2", "--reference", tmp_path / "ref.png")
    assert result.returncode == 1 and "ref.png: no such file" in result.stderr
    assert not (tmp_path / "out.png").exists()  # refused before anything was written
    big = np.asarray(Image.fromarray(image).resize((134, 90), Image.BICUBIC))
    images.write_png(tmp_path / "ref.png", big)
    result = nxe_cli("upscale", tmp_path / "in.png", "-o", tmp_path / "out.png",
                     "--model", "espcn-x2", "--reference", tmp_path / "ref.png")
    assert result.returncode == 0, result.stderr
    out = images.read_png(tmp_path / "out.png")
    np.testing.assert_array_equal(out, nxe.sr.Upscaler("espcn-x2").upscale(image))
    psnr = metrics.psnr(metrics.luma(out), metrics.luma(big), border=2)
    ssim = metrics.ssim(metrics.luma(out), metrics.luma(big), border=2)
    assert f"PSNR {psnr:.2f} dB, SSIM {ssim:.4f}" in result.stdout


def test_upscale_int8_writes_what_the_int8_library_computes(tmp_path):
    image = photo(channels=3)
    images.write_png(tmp_path / "in.png", image)
    result = nxe_cli("upscale", tmp_path / "in.png", "-o", tmp_path / "out.png",
                     "--model", "espcn-x2", "--precision", "int8")
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(images.read_png(tmp_path / "out.png"),
                                  nxe.sr.Upscaler("espcn-x2", precision="int8").upscale(image))
    result = nxe_cli("upscale", tmp_path / "in.png", "-o", tmp_path / "edsr.png",
                     "--model", "edsr-x2", "--precision", "int8")
    assert result.returncode != 0 and "'edsr-x2' has no int8 variant" in result.stderr
    assert not (tmp_path / "edsr.png").exists()


def test_upscale_jpeg_and_the_shipped_sample(tmp_path):
    Image.fromarray(photo()).save(tmp_path / "in.jpg", quality=95)
    result = nxe_cli("upscale", tmp_path / "in.jpg", "-o", tmp_path / "out.jpg")
    assert result.returncode == 0, result.stderr
    assert Image.open(tmp_path / "out.jpg").size == (134, 90)
    result = nxe_cli("upscale", "sample", "-o", tmp_path / "sample-x2.png")
    assert result.returncode == 0, result.stderr
    sample = images.read_image(nxe.sr.sample_image())
    assert images.read_png(tmp_path / "sample-x2.png").shape[:2] == \
        (2 * sample.shape[0], 2 * sample.shape[1])


def test_upscale_y4m_video_with_progress_and_reference(tmp_path):
    header = images.Y4mHeader(41, 27, "yuv420p")
    frames = [[photo(*s[:2], 1, seed=i) for s in nxe.sr.plane_shapes("yuv420p", 41, 27)]
              for i in range(4)]
    with open(tmp_path / "in.y4m", "wb") as f:
        images.write_y4m_header(f, header)
        for planes in frames:
            images.write_y4m_frame(f, planes)
    up = nxe.sr.Upscaler("espcn-x2")
    expected = [up.upscale_planes(planes, "yuv420p") for planes in frames]
    result = nxe_cli("upscale", tmp_path / "in.y4m", "-o", tmp_path / "out.y4m",
                     "--reference", tmp_path / "out.y4m.ref")
    assert result.returncode == 1 and "no such file" in result.stderr  # no reference yet
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.y4m"]
    with open(tmp_path / "out.y4m.ref", "wb") as f:
        images.write_y4m_header(f, images.Y4mHeader(82, 54, "yuv420p"))
        for planes in expected:
            images.write_y4m_frame(f, planes)
    result = nxe_cli("upscale", tmp_path / "in.y4m", "-o", tmp_path / "out.y4m",
                     "--reference", tmp_path / "out.y4m.ref")
    assert result.returncode == 0, result.stderr
    assert "4/4 frames" in result.stderr and "frames/s" in result.stderr
    assert "4 frames" in result.stdout and "PSNR inf dB, SSIM 1.0000" in result.stdout
    with open(tmp_path / "out.y4m", "rb") as f:
        out_header = images.read_y4m_header(f)
        assert (out_header.width, out_header.height) == (82, 54)
        for want, got in zip(expected, images.y4m_frames(f, out_header), strict=True):
            for a, b in zip(want, got):
                np.testing.assert_array_equal(a, b)


def test_upscale_errors_are_messages(tmp_path):
    result = nxe_cli("upscale", tmp_path / "absent.png", "-o", tmp_path / "o.png")
    assert result.returncode == 1 and "absent.png: no such file" in result.stderr
    images.write_png(tmp_path / "in.png", photo())
    result = nxe_cli("upscale", tmp_path / "in.png", "-o", tmp_path / "o.png", "--model", "x9")
    assert result.returncode == 2 and "no built-in SR model named 'x9'" in result.stderr
    (tmp_path / "cut.jpg").write_bytes(jpeg_bytes()[:300])
    result = nxe_cli("upscale", tmp_path / "cut.jpg", "-o", tmp_path / "o.png")
    assert result.returncode == 1 and "cut.jpg: cannot decode the image" in result.stderr
    result = nxe_cli("upscale", tmp_path / "clip.mkv", "-o", tmp_path / "o.mkv")
    assert result.returncode == 1 and "clip.mkv: no such file" in result.stderr


def test_readme_super_resolution_example_runs(tmp_path, monkeypatch):
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = [b for b in re.findall(r"^```python\n(.*?)^```", readme, re.S | re.M)
              if "nxe.sr" in b]
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    sample = images.read_image(nxe.sr.sample_image())
    assert sample.shape == (150, 225, 3)
    written = images.read_png(tmp_path / "sample-x2.png")
    np.testing.assert_array_equal(written, namespace["big"])
    assert written.shape == (300, 450, 3)
