// test_api.cpp — the C++ API (nxe.hpp) against the installed package: builds y = relu(x + b)
// and z = y * x, compiles it, and checks Run, RunNoCopy, CreateInput, bound buffers and a
// binary loaded from memory against results computed here (float32 sums and products of the
// same operands: compared exactly); the run statistics of each path; that failures throw
// nxe::Error with the C API's status; and that owners are move-only. Exits non-zero on any
// failure, naming it.
#include <nxe/nxe.hpp>

#include <cstdio>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

static_assert(!std::is_copy_constructible_v<nxe::Context>);
static_assert(!std::is_copy_constructible_v<nxe::Graph>);
static_assert(!std::is_copy_constructible_v<nxe::Executable>);
static_assert(!std::is_copy_constructible_v<nxe::Binding>);
static_assert(!std::is_copy_constructible_v<nxe::Module>);
static_assert(!std::is_copy_assignable_v<nxe::Executable>);
static_assert(std::is_nothrow_move_constructible_v<nxe::Executable>);
static_assert(std::is_nothrow_move_assignable_v<nxe::Binding>);

namespace
{

int failures = 0;

void Expect(bool ok, const char *what, int line)
{
    if (!ok) {
        std::fprintf(stderr, "test_api.cpp:%d: %s\n", line, what);
        failures++;
    }
}
#define EXPECT(cond) Expect((cond), #cond, __LINE__)

// Runs `body`, which must throw nxe::Error with `status`.
template <typename F> void ExpectThrows(nxe_status status, F body, int line)
{
    try {
        body();
        Expect(false, "no nxe::Error thrown", line);
    } catch (const nxe::Error &e) {
        if (e.status() != status || e.message().empty()) {
            std::fprintf(stderr, "test_api.cpp:%d: got %s (%s), expected %s\n", line,
                         nxe_status_name(e.status()), e.what(), nxe_status_name(status));
            failures++;
        }
    }
}
#define EXPECT_THROWS(status, ...) ExpectThrows((status), [&] { __VA_ARGS__; }, __LINE__)

const std::vector<float> kBias = {0.5f, -1.0f, 2.0f, -0.25f, 1.5f, -3.0f};
const std::vector<int64_t> kShape = {2, 3};

nxe::Graph BuildGraph(const nxe::Context &ctx)
{
    nxe::Graph g(ctx);
    nxe::Tensor x = g.Input("x", NXE_DTYPE_F32, kShape);
    nxe::Tensor b = g.Constant("b", kBias, kShape);
    nxe::Tensor s = g.Transient("s");
    nxe::Tensor y = g.Output("y");
    nxe::Tensor z = g.Output("z");
    g.AddOp("Add", {x, b}, {s}, "add");
    g.AddOp("Relu", {s}, {y}, "relu");
    g.AddOp("Mul", {y, x}, {z}, "mul"); // reads the output y
    return g;
}

// y = relu(x + b), z = y * x, in float32 as the kernels compute them.
void Reference(const std::vector<float> &x, std::vector<float> &y, std::vector<float> &z)
{
    y.resize(x.size());
    z.resize(x.size());
    for (size_t i = 0; i < x.size(); i++) {
        float s = x[i] + kBias[i];
        y[i] = s > 0.0f ? s : 0.0f;
        z[i] = y[i] * x[i];
    }
}

bool Equal(const nxe::NDArray &a, const std::vector<float> &want)
{
    return a.dtype() == NXE_DTYPE_F32 && a.shape() == kShape && a.ToVector<float>() == want;
}

} // namespace

int main()
{
    try {
        nxe::Context ctx;
        nxe::Graph g = BuildGraph(ctx);
        nxe_compile_options options = NXE_COMPILE_OPTIONS_INIT;
        options.num_threads = 1;
        nxe::Module m(g.Compile(&options));
        EXPECT(m.executable().NumInputs() == 1 && m.executable().NumOutputs() == 2);
        EXPECT(m.executable().InputName(0) == "x" && m.executable().OutputName(1) == "z");

        const std::vector<float> xs = {1.0f, -2.0f, 3.0f, 0.25f, -4.0f, 5.0f};
        std::vector<float> want_y, want_z;
        Reference(xs, want_y, want_z);
        nxe::NDArray x = nxe::NDArray::FromVector(xs, kShape);

        // Run: owned outputs, the input copied in and the outputs copied out.
        nxe_run_stats before = m.executable().Stats();
        std::vector<nxe::NDArray> out = m.Run({x});
        nxe_run_stats after = m.executable().Stats();
        EXPECT(out.size() == 2 && out[0].owns_memory() && Equal(out[0], want_y) &&
               Equal(out[1], want_z));
        EXPECT(after.inputs_copied == before.inputs_copied + 1);
        EXPECT(after.bytes_copied_out == before.bytes_copied_out + 2 * 6 * sizeof(float));

        // RunNoCopy: views of the result area.
        std::vector<nxe::NDArray> views = m.RunNoCopy({x});
        EXPECT(views.size() == 2 && !views[0].owns_memory() && Equal(views[0], want_y) &&
               Equal(views[1], want_z));

        // CreateInput: a staging slot read in place.
        nxe::NDArray staged = m.CreateInput(0);
        EXPECT(!staged.owns_memory() && staged.shape() == kShape);
        for (size_t i = 0; i < xs.size(); i++)
            staged.Data<float>()[i] = xs[i];
        before = m.executable().Stats();
        out = m.Run({staged});
        after = m.executable().Stats();
        EXPECT(Equal(out[0], want_y) && Equal(out[1], want_z));
        EXPECT(after.inputs_in_place == before.inputs_in_place + 1);
        EXPECT(after.bytes_copied_in == before.bytes_copied_in);
        m.ResetStaging();

        // Bound buffers: nothing copied either way; rebinding and refilling in place.
        nxe::NDArray y = nxe::NDArray::Empty(NXE_DTYPE_F32, kShape);
        nxe::NDArray z = nxe::NDArray::Empty(NXE_DTYPE_F32, kShape);
        nxe::Binding binding = m.Bind({x}, {y, z});
        before = m.executable().Stats();
        binding.Run();
        after = m.executable().Stats();
        EXPECT(Equal(y, want_y) && Equal(z, want_z));
        EXPECT(after.runs == before.runs + 1);
        EXPECT(after.bytes_copied_in == before.bytes_copied_in);
        EXPECT(after.bytes_copied_out == before.bytes_copied_out);
        std::vector<float> xs2 = xs;
        for (float &v : xs2)
            v = -v * 0.5f;
        for (size_t i = 0; i < xs2.size(); i++)
            x.Data<float>()[i] = xs2[i];
        binding.Run();
        Reference(xs2, want_y, want_z);
        EXPECT(Equal(y, want_y) && Equal(z, want_z));

        // Move-only owners: a moved binding runs; the moved-from one holds nothing.
        nxe::Binding moved = std::move(binding);
        moved.Run();
        EXPECT(binding.get() == nullptr);
        EXPECT_THROWS(NXE_ERROR_INVALID_ARGUMENT, binding.Run());

        // A binary compiled here and loaded from memory runs the same.
        std::vector<uint8_t> bytes = g.CompileToBinary(&options);
        nxe_load_options load = NXE_LOAD_OPTIONS_INIT;
        load.num_threads = 1;
        nxe::Module loaded(nxe::Executable::LoadMemory(bytes.data(), bytes.size(), &load));
        std::vector<nxe::NDArray> again = loaded.Run({x});
        EXPECT(Equal(again[0], want_y) && Equal(again[1], want_z));

        // Failures throw with the C API's status.
        EXPECT_THROWS(NXE_ERROR_NOT_FOUND, g.AddOp("NoSuchOp", {}, {}));
        EXPECT_THROWS(NXE_ERROR_NOT_FOUND, g.FindTensor("missing"));
        nxe::NDArray wrong = nxe::NDArray::Empty(NXE_DTYPE_F32, {3, 2});
        EXPECT_THROWS(NXE_ERROR_SHAPE_MISMATCH, m.Run({wrong}));
        nxe::NDArray ints = nxe::NDArray::Empty(NXE_DTYPE_I32, kShape);
        EXPECT_THROWS(NXE_ERROR_DTYPE_MISMATCH, m.Run({ints}));
        EXPECT_THROWS(NXE_ERROR_DTYPE_MISMATCH, y.Data<int32_t>());
        nxe::Binding bad = m.executable().Bind();
        nxe_tensor_desc small = y.Desc();
        small.data_size = sizeof(float) * 5;
        EXPECT_THROWS(NXE_ERROR_BUFFER_TOO_SMALL, bad.BindOutput(0, small));
        nxe::NDArray spare = nxe::NDArray::Empty(NXE_DTYPE_F32, {7});
        nxe_tensor_desc misaligned = nxe::MakeDesc(static_cast<char *>(spare.data()) + 2,
                                                   6 * sizeof(float), NXE_DTYPE_F32, kShape);
        EXPECT_THROWS(NXE_ERROR_INVALID_ARGUMENT, bad.BindOutput(0, misaligned));
        bad.BindOutput(0, y);
        EXPECT_THROWS(NXE_ERROR_INVALID_ARGUMENT, bad.BindOutput(1, y)); // overlaps output 0
        EXPECT_THROWS(NXE_ERROR_INVALID_STATE, bad.Run());               // x, z unbound
        EXPECT_THROWS(NXE_ERROR_SHAPE_MISMATCH, nxe::NDArray::FromVector(xs, {4}));

        nxe::Executable first = g.Compile(&options);
        nxe::Executable second = std::move(first);
        EXPECT(first.get() == nullptr && second.get() != nullptr && second.NumInputs() == 1);
        EXPECT_THROWS(NXE_ERROR_INVALID_ARGUMENT, first.NumInputs());
        // The bindings, declared after the module, are released before its executable.
    } catch (const nxe::Error &e) {
        std::fprintf(stderr, "unexpected nxe::Error: %s\n", e.what());
        return 1;
    }
    if (failures == 0)
        std::printf("test_api: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
